package management

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// The stored state of a management plane is etcd's data folder as a
// fresh start leaves it once the stack's CRDs and webhook configurations
// are installed, before any cluster. The first start of a stack on a
// machine makes it (it stops kube-apiserver and etcd, copies the folder
// and starts them again); every later start copies it into the lab's
// folder before etcd starts, so kube-apiserver finds its CRDs, roles and
// namespaces stored instead of making them. Envtest then updates the
// CRDs' conversions and the webhook configurations in place, for this
// start's webhook servers.

// StateEnv names the folder of stored states, which otherwise is
// faultline/state in the user's cache folder; "off" starts every
// management plane fresh.
const StateEnv = "FAULTLINE_STATE"

// stateOff is StateEnv's value that turns stored states off.
const stateOff = "off"

// stateRoot is the folder of stored states ("" when they are off).
func stateRoot(explicit string) (string, error) {
	dir := explicit
	if dir == "" {
		dir = os.Getenv(StateEnv)
	}
	if dir == stateOff {
		return "", nil
	}
	if dir != "" {
		return dir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the stored management states: %w (set $%s)", err, StateEnv)
	}
	return filepath.Join(cache, "faultline", "state"), nil
}

// stateFolder is where the state of assets and mf is kept under root:
// another kube-apiserver and etcd, or any change to a CRD or webhook
// configuration as read, makes another.
func stateFolder(root, assets string, mf *manifests) string {
	h := sha256.Sum256([]byte(filepath.Base(assets) + "\n" + mf.sum))
	return filepath.Join(root, filepath.Base(assets)+"-"+hex.EncodeToString(h[:])[:16])
}

// stored tells whether a state is kept in folder.
func stored(folder string) bool {
	_, err := os.Stat(filepath.Join(folder, "member"))
	return err == nil
}

// storeState copies etcd's stopped data folder to folder, with the
// webhook server's certificate files and port when certs are given,
// whole or not at all: a start beside this one that stored it first wins,
// and ours says whether this one did.
func storeState(folder, etcdDir string, certs map[string][]byte, port int) (ours bool, err error) {
	if err := os.MkdirAll(filepath.Dir(folder), 0o700); err != nil {
		return false, fmt.Errorf("store the management state: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(folder), ".making-")
	if err != nil {
		return false, fmt.Errorf("store the management state: %w", err)
	}
	if err := errors.Join(copyTree(etcdDir, tmp), writeWebhook(tmp, certs, port), writeDigests(tmp)); err != nil {
		return false, errors.Join(fmt.Errorf("store the management state: %w", err), os.RemoveAll(tmp))
	}
	if err := os.Rename(tmp, folder); err != nil {
		if stored(folder) {
			return false, os.RemoveAll(tmp)
		}
		return false, errors.Join(fmt.Errorf("store the management state: %w", err), os.RemoveAll(tmp))
	}
	return true, nil
}

// The compiled stack's webhook server keeps its certificate and port
// with the state (webhookDir; the port in portFile): the stored CRDs'
// conversions and webhook configurations point at them, so a start that
// serves them again installs nothing.
const (
	webhookDir = "webhook"
	portFile   = "port"
)

// writeWebhook writes certs and port into state's webhookDir (nothing
// without certs).
func writeWebhook(state string, certs map[string][]byte, port int) error {
	if len(certs) == 0 {
		return nil
	}
	dir := filepath.Join(state, webhookDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, b := range certs {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, portFile), []byte(strconv.Itoa(port)+"\n"), 0o600)
}

// readCerts reads a webhook server's certificate and key.
func readCerts(dir string) (map[string][]byte, error) {
	certs := map[string][]byte{}
	for _, name := range []string{"tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("the webhook server's certificate: %w", err)
		}
		certs[name] = b
	}
	return certs, nil
}

// A portHold is a stored state's webhook port held for one management
// plane: an exclusive lock on its port file, until release.
type portHold struct {
	f      *os.File
	folder string
	port   int
}

// holdPort holds the webhook port of the state in folder when the state
// has one, no other management plane holds it and 127.0.0.1 has it free;
// else it is nil, and why says which.
func holdPort(folder string) (*portHold, string) {
	f, err := os.Open(filepath.Join(folder, webhookDir, portFile))
	if err != nil {
		return nil, err.Error()
	}
	b, err := io.ReadAll(f)
	port, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err = errors.Join(err, perr); err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err == nil {
		var l net.Listener
		if l, err = net.Listen("tcp", loopback(port)); err == nil {
			err = l.Close()
		}
	}
	if err != nil {
		// Closing the file lets go of the lock.
		return nil, errors.Join(err, f.Close()).Error()
	}
	return &portHold{f: f, folder: folder, port: port}, ""
}

// release lets go of the port.
func (h *portHold) release() error {
	if h == nil {
		return nil
	}
	return h.f.Close()
}

// statePort is a free loopback port for a new state's webhook server,
// below the kernel's range of ports for outgoing connections when there is
// room: no connection takes it between the lab's starts.
func statePort() (int, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for range 20 {
		if low <= 20000 {
			break
		}
		port := 20000 + rand.IntN(low-20000)
		if l, err := net.Listen("tcp", loopback(port)); err == nil {
			return port, l.Close()
		}
	}
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// copyTree copies the folder from into to, which exists, file by file;
// anything but folders and regular files is refused, naming it.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o700)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: %w", path, regularfile.ErrNotRegular)
		}
		return copyFile(path, dst)
	})
}

func copyFile(from, to string) error {
	in, err := regularfile.Open(from, maxStateFile)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		return errors.Join(err, out.Close())
	}
	return out.Close()
}

// A stored state holds digestsFile: the SHA-256 of each of its files, as
// sha256sum(1) prints them, made when it was stored and checked before it
// is used (verifyDigests). etcd's data and the webhook server's key are
// files anyone who can write the user's cache can change.
const digestsFile = "SHA256SUMS"

// maxStateFile bounds a file of a stored state (etcd's database of a
// fresh plane is a few MiB).
const maxStateFile = 1 << 30

// digests is the SHA-256 of every regular file under dir but digestsFile,
// by path relative to dir.
func digests(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == digestsFile {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: %w", path, regularfile.ErrNotRegular)
		}
		f, err := regularfile.Open(path, maxStateFile)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	return out, err
}

// writeDigests writes dir's digestsFile.
func writeDigests(dir string) error {
	sums, err := digests(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, rel := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&b, "%s  %s\n", sums[rel], rel)
	}
	return os.WriteFile(filepath.Join(dir, digestsFile), []byte(b.String()), 0o600)
}

// verifyDigests says how the files of folder are not those its
// digestsFile lists (a stored state's, a built stack's): a file changed,
// added or gone, or something but a folder or a regular file (a FIFO
// would hold a copy for ever); nil when they are.
func verifyDigests(folder string) error {
	b, err := regularfile.Read(filepath.Join(folder, digestsFile), regularfile.Small)
	if err != nil {
		return fmt.Errorf("its digests: %w (made before they were recorded, or cut short)", err)
	}
	want := map[string]string{}
	for line := range strings.Lines(string(b)) {
		sum, rel, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "  ")
		if !ok {
			return fmt.Errorf("%s: malformed line %q", filepath.Join(folder, digestsFile), line)
		}
		want[rel] = sum
	}
	got, err := digests(folder)
	if err != nil {
		return err
	}
	for _, rel := range slices.Sorted(maps.Keys(got)) {
		switch sum, ok := want[rel]; {
		case !ok:
			return fmt.Errorf("%s: not among the files recorded", filepath.Join(folder, rel))
		case sum != got[rel]:
			return fmt.Errorf("%s: changed since it was recorded (SHA-256 %s, recorded %s)", filepath.Join(folder, rel), got[rel], sum)
		}
	}
	for rel := range want {
		if _, ok := got[rel]; !ok {
			return fmt.Errorf("%s: gone since it was recorded", filepath.Join(folder, rel))
		}
	}
	return nil
}
