package vcsim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The lab's certificate authority, made by TrustLabCertificates: the
// vCenter simulators started after it serve certificates it signs.
var labCA struct {
	sync.Mutex
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// defaultCertDirs are crypto/x509's system certificate folders on Linux,
// which SSL_CERT_DIR replaces when set.
const defaultCertDirs = "/etc/ssl/certs:/etc/pki/tls/certs"

// TrustLabCertificates makes this process trust the vCenter simulators
// the lab starts from now on through the system's roots, as a vCenter
// whose CA is installed on the host is trusted. CAPV trusts a vCenter by
// thumbprint, and govmomi verifies the thumbprint only after a handshake
// against the system's roots has failed: without it, every connection
// CAPV opens to vcsim costs two TLS handshakes, the first aborted with
// "bad certificate" (at 20 clusters, 55 a second). It makes a CA whose key
// never leaves the process, writes its certificate into a folder of its
// own and adds that folder to SSL_CERT_DIR, which crypto/x509 reads when
// the process first verifies a certificate against the system's roots:
// it must run before that, once per process (main or a suite calls it,
// as RouteLibraryLogs; the lab itself never sets process-wide state). It
// does nothing but on Linux, where SSL_CERT_DIR is read. cleanup removes
// the folder at the end of the process; a later call in another process
// removes the folders of processes that died without theirs.
func TrustLabCertificates() (cleanup func() error, err error) {
	labCA.Lock()
	defer labCA.Unlock()
	none := func() error { return nil }
	if runtime.GOOS != "linux" || labCA.cert != nil {
		return none, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("lab CA: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: fmt.Sprintf("faultline lab CA (process %d)", os.Getpid())},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("lab CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("lab CA: %w", err)
	}
	sweepTrustDirs(os.TempDir())
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", trustDirPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("lab CA folder: %w", err)
	}
	remove := func() error { return os.RemoveAll(dir) }
	if err := os.WriteFile(filepath.Join(dir, "faultline-lab-ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, errors.Join(fmt.Errorf("lab CA: %w", err), remove())
	}
	dirs := os.Getenv("SSL_CERT_DIR")
	if dirs == "" {
		dirs = defaultCertDirs
	}
	if err := os.Setenv("SSL_CERT_DIR", dirs+":"+dir); err != nil {
		return nil, errors.Join(fmt.Errorf("lab CA: %w", err), remove())
	}
	labCA.cert, labCA.key, labCA.dir = cert, key, dir
	return remove, nil
}

// trustDirPrefix starts the name of a lab CA's folder, which goes on with
// the pid of the process it belongs to: faultline-trust-PID-RANDOM.
const trustDirPrefix = "faultline-trust-"

// sweepTrustDirs removes from tmp the lab CA folders of processes that
// are gone: a process killed hard (SIGKILL, or the OOM killer) never ran
// its cleanup. Each holds a certificate and no key, so a folder it cannot
// tell about (a process it may not signal) is left as it is.
func sweepTrustDirs(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := trustDirPID(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
}

// trustDirPID is the pid in the name of a lab CA's folder.
func trustDirPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, trustDirPrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// signedByLabCA is the lab CA's certificate and key, nil before
// TrustLabCertificates.
func signedByLabCA() (*x509.Certificate, *ecdsa.PrivateKey) {
	labCA.Lock()
	defer labCA.Unlock()
	return labCA.cert, labCA.key
}
