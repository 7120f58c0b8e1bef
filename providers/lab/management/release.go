package management

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/faultline-dev/faultline/hack"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// ReleasesEnv names the folder of built stacks, which otherwise is
// faultline/releases in the user's cache folder.
const ReleasesEnv = "FAULTLINE_RELEASES"

// builtMark is the line release-managers.sh ends VERSIONS with: its
// managers' webhook servers listen on 127.0.0.1.
const builtMark = "webhooks 127.0.0.1"

// managerBinaries are a stack's manager binaries, as release-managers.sh
// names them, with the manifests' folder whose webhooks and conversions
// each serves.
var managerBinaries = []struct{ name, provider string }{
	{"capi-manager", "core"}, {"kcp-manager", "controlplane"},
	{"cabpk-manager", "bootstrap"}, {"capv-manager", "infrastructure"},
}

// ReleasesDir is the folder that holds built stacks, one folder each.
func ReleasesDir() (string, error) {
	if d := os.Getenv(ReleasesEnv); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the cache of built releases: %w (set $%s)", err, ReleasesEnv)
	}
	return filepath.Join(cache, "faultline", "releases"), nil
}

// StackDir is where stack's managers and manifests are, built or not.
func StackDir(stack labconfig.Stack) (string, error) {
	root, err := ReleasesDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, stack.Key()), nil
}

// Built tells whether stack's managers and manifests are in its folder.
// The compiled stack needs no build.
func Built(stack labconfig.Stack) (bool, error) {
	if stack.Compiled {
		return true, nil
	}
	dir, err := StackDir(stack)
	if err != nil {
		return false, err
	}
	versions, err := os.ReadFile(filepath.Join(dir, "VERSIONS"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	// A build whose webhooks listen on every interface is built again.
	if !strings.Contains(string(versions), "\n"+builtMark+"\n") {
		return false, nil
	}
	files := []string{"manifests", digestsFile}
	for _, m := range managerBinaries {
		files = append(files, m.name)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, os.ErrNotExist) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	return true, nil
}

// Verify says how the built stack's files (managers, manifests) are not
// those its build recorded the SHA-256 of (release-managers.sh writes
// SHA256SUMS last): a binary replaced or cut short, a manifest edited.
// A stack verified once is verified again in this process only when one
// of its files changed since (size, modification time, inode).
func Verify(stack labconfig.Stack) error {
	if stack.Compiled {
		return nil
	}
	dir, err := StackDir(stack)
	if err != nil {
		return err
	}
	sig, err := filesSignature(dir)
	if err != nil {
		return err
	}
	if was, ok := verified.Load(dir); ok && was == sig {
		return nil
	}
	if err := verifyDigests(dir); err != nil {
		return fmt.Errorf("stack %s in %s is not as it was built: %w; build it again: faultline lab releases --build %s", stack, dir, err, stack.Name)
	}
	verified.Store(dir, sig)
	return nil
}

// verified holds, by stack folder, the filesSignature it had when
// Verify last found it whole.
var verified sync.Map

// filesSignature is every file of dir with its size, modification time
// and inode, in one string.
func filesSignature(dir string) (string, error) {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		ino := uint64(0)
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		fmt.Fprintf(&b, "%s %v %d %d %d\n", path, info.Mode(), info.Size(), info.ModTime().UnixNano(), ino)
		return nil
	})
	return b.String(), err
}

// lockBuild takes the lock of the build of the stack in dir, saying so
// on progress when another process holds it.
func lockBuild(ctx context.Context, dir string, progress io.Writer, stack labconfig.Stack) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	// Closing the file releases the lock.
	unlock := func() { f.Close() }
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		return unlock, nil
	}
	fmt.Fprintf(progress, "release %s: another process is building it; waiting\n", stack.Name)
	locked := make(chan error, 1)
	go func() { locked <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-locked:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s.lock: %w", dir, err)
		}
		return unlock, nil
	case <-ctx.Done():
		// The waiting goroutine ends with the other build; the lock it
		// then takes goes with the file, closed here.
		f.Close()
		return nil, ctx.Err()
	}
}

// Build builds stack's managers from their module sources through the Go
// module proxy, unless they are built, and returns their folder. It runs
// release-managers.sh (embedded) with the go command on PATH, writing each
// line of its progress to progress: a cold build takes minutes.
func Build(ctx context.Context, stack labconfig.Stack, progress io.Writer) (string, error) {
	dir, err := StackDir(stack)
	if err != nil {
		return "", err
	}
	if ok, err := Built(stack); err != nil {
		return "", err
	} else if ok && Verify(stack) == nil {
		return dir, nil
	}
	// One build of a stack at a time on a machine: another process
	// building it (CI builds ahead while a suite starts a lab of it) is
	// waited for, and its build used.
	unlock, err := lockBuild(ctx, dir, progress, stack)
	if err != nil {
		return "", err
	}
	defer unlock()
	if ok, err := Built(stack); err != nil {
		return "", err
	} else if ok {
		if Verify(stack) == nil {
			return dir, nil
		}
		// Not as built: built again, from nothing.
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("stack %s is not built in %s and building it needs the go command: %w", stack, dir, err)
	}
	work, err := os.MkdirTemp("", "faultline-release-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	scripts := filepath.Join(work, "hack")
	if err := os.MkdirAll(scripts, 0o700); err != nil {
		return "", err
	}
	for name, text := range map[string]string{"lib.sh": hack.Lib, "release-managers.sh": hack.ReleaseManagers} {
		if err := os.WriteFile(filepath.Join(scripts, name), []byte(text), 0o700); err != nil {
			return "", err
		}
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(scripts, "release-managers.sh"), stack.ClusterAPI, stack.CAPV)
	cmd.Env = append(os.Environ(), ReleasesEnv+"="+filepath.Dir(dir))
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.Discard, pw
	var tail []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(pr)
		for s.Scan() {
			fmt.Fprintf(progress, "release %s: %s\n", stack.Name, s.Text())
			tail = append(tail, s.Text())
			if len(tail) > 20 {
				tail = tail[1:]
			}
		}
	}()
	err = cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return "", fmt.Errorf("build stack %s: %w\n%s", stack, err, strings.Join(tail, "\n"))
	}
	return dir, nil
}
