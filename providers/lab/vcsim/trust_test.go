package vcsim

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A vCenter simulator started after TrustLabCertificates is trusted by a
// client with the system's roots, as CAPV's first handshake is; it runs
// in a process of its own, since crypto/x509 reads the system's roots
// once per process.
func TestTrustLabCertificates(t *testing.T) {
	if os.Getenv("FAULTLINE_TRUST_CHILD") == "1" {
		trustChild(t)
		return
	}
	if _, err := os.Stat("/etc/ssl/certs"); err != nil {
		t.Skipf("no system certificate folder: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrustLabCertificates$", "-test.v")
	cmd.Env = append(os.Environ(), "FAULTLINE_TRUST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verified against the system's roots") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func trustChild(t *testing.T) {
	cleanup, err := TrustLabCertificates()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cleanup(); err != nil {
			t.Error(err)
		}
	}()
	if dirs := os.Getenv("SSL_CERT_DIR"); !strings.HasPrefix(dirs, defaultCertDirs+":") && !strings.Contains(dirs, ":") {
		t.Errorf("SSL_CERT_DIR %q keeps no system folder", dirs)
	}
	sim, err := Start(Input{})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	// RootCAs nil: the system's roots, and the lab CA's folder.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	resp, err := c.Get(sim.URL().String())
	if err != nil {
		t.Fatalf("vcsim not trusted: %v", err)
	}
	_ = resp.Body.Close()
	t.Log("vcsim's certificate verified against the system's roots")
}

// A lab CA folder whose process is gone is removed; one of a live
// process, or with a name that is not a lab CA folder's, is kept.
func TestSweepTrustDirs(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dead := filepath.Join(tmp, fmt.Sprintf("%s%d-123", trustDirPrefix, gone.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("%s%d-456", trustDirPrefix, os.Getpid()))
	parent := filepath.Join(tmp, fmt.Sprintf("%s%d-789", trustDirPrefix, os.Getppid()))
	old := filepath.Join(tmp, trustDirPrefix+"3234452861")
	other := filepath.Join(tmp, "faultline-lab-1")
	for _, d := range []string{dead, live, parent, old, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepTrustDirs(tmp)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("folder of exited process %d: %v, want it removed", gone.Process.Pid, err)
	}
	for _, d := range []string{live, parent, old, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", filepath.Base(d), err)
		}
	}
}
