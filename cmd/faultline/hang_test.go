package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers/lab"
)

// A vCenter that accepts TCP and never answers, or completes TLS and then
// says nothing, does not hold a --timeout 5s run: it ends within 10 s
// with exit 3 naming the set-up deadline. Both servers are the test's
// own, on 127.0.0.1.
func TestHungVCenter(t *testing.T) {
	t.Parallel()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	silent := httptest.NewUnstartedServer(nil)
	// TLS completes (the server's handshake), then nothing is read.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	tlsLn := tls.NewListener(mustListen(t), &tls.Config{Certificates: []tls.Certificate{selfSigned(t, silent)}})
	t.Cleanup(func() { tlsLn.Close() })
	for _, ln := range []net.Listener{tcp, tlsLn} {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					if tc, ok := c.(*tls.Conn); ok {
						_ = tc.Handshake()
					}
					<-hold
					c.Close()
				}()
			}
		}()
	}
	for name, addr := range map[string]string{"tcp": tcp.Addr().String(), "tls": tlsLn.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			started := time.Now()
			code := execute([]string{"run", "vm-power-cycle", "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--vcenter-insecure",
				"--vcenter-url", "https://u:p@" + addr + "/sdk", "--timeout", "5s", "--artifacts", t.TempDir()}, &out, &errOut)
			took := time.Since(started)
			if code != 3 || took > 10*time.Second || !strings.Contains(errOut.String(), "took longer than its set-up deadline, 5s (--setup-timeout)") {
				t.Errorf("exit %d after %s, stderr %q", code, took.Round(time.Millisecond), errOut.String())
			}
		})
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// selfSigned is httptest's own certificate, which s serves.
func selfSigned(t *testing.T, s *httptest.Server) tls.Certificate {
	t.Helper()
	s.StartTLS()
	defer s.Close()
	return s.TLS.Certificates[0]
}

// --vcenter-insecure is said once, loudly, and the run goes on.
func TestInsecureWarnsOnce(t *testing.T) {
	t.Parallel()
	u := vcsimURL(t)
	var out, errOut bytes.Buffer
	code := execute([]string{"run", "vm-power-cycle", "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--vcenter-insecure",
		"--vcenter-url", u, "--dry-run", "--artifacts", t.TempDir()}, &out, &errOut)
	if n := strings.Count(errOut.String(), "TLS verification of vCenter is"); code != 0 || n != 1 {
		t.Errorf("exit %d, %d warnings, want 0 and 1\nstderr: %s\nstdout: %s", code, n, errOut.String(), out.String())
	}
}

// An http:// vCenter URL would send the password in cleartext: refused
// (exit 2) before any request unless --vcenter-plain-http names the risk,
// and even then never for a destructive run against a host other than
// loopback. The server is the test's own, on 127.0.0.1, and counts what
// reaches it.
func TestCleartextPassword(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	requests := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		want  string
		reach bool
	}{
		{"plain http", []string{"--vcenter-url", "http://u:secret@" + addr + "/sdk", "--allow-vcenter", "127.0.0.1"}, 2, "its login would send the password in cleartext; use https://", false},
		{"plain http to another host, destructive", []string{"--vcenter-url", "http://u:secret@vc.example.com/sdk", "--allow-vcenter", "vc.example.com", "--vcenter-plain-http"}, 2, "refusing a destructive run against vCenter http://vc.example.com/sdk over http", false},
		{"opted in, loopback", []string{"--vcenter-url", "http://u:secret@" + addr + "/sdk", "--allow-vcenter", "127.0.0.1", "--vcenter-plain-http", "--setup-timeout", "5s"}, 3, "", true},
	} {
		before := requests()
		var out, errOut bytes.Buffer
		code := execute(append([]string{"run", "vm-power-cycle", "--provider", "vsphere", "--artifacts", t.TempDir()}, tc.args...), &out, &errOut)
		reached := requests() > before
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) || reached != tc.reach || strings.Contains(errOut.String(), "secret") {
			t.Errorf("%s: exit %d, reached the server %t; want %d, %t and %q\nstderr: %s", tc.name, code, reached, tc.code, tc.reach, tc.want, errOut.String())
		}
	}
}

// A vCenter that stops answering once the fault is in (every power-on
// waits 10 minutes in vcsim, on 127.0.0.1): a --timeout 5s run ends
// within 15 s, its fault left pending with the recover command; and
// without a timeout, a second Ctrl-C ends the clean-up at once.
func TestIntegrationHangAfterInject(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds faultline and runs it in another process")
	}
	bin := buildFaultline(t)
	m := simulator.VPX()
	m.DelayConfig.MethodDelay = map[string]int{"PowerOnVM_Task": int((10 * time.Minute).Milliseconds())}
	sim, err := lab.StartVCSim(lab.VCSimInput{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	// A VM each: the first's power-on never lands.
	scenarios := map[string]string{}
	for _, vm := range []string{"DC0_H0_VM0", "DC0_H0_VM1"} {
		scenarios[vm] = filepath.Join(t.TempDir(), "hold.yaml")
		if err := os.WriteFile(scenarios[vm], []byte(strings.ReplaceAll(holdScenario, "DC0_H0_VM0", vm)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	u := sim.URL()
	u.User = url.UserPassword("user", "pass")
	env := append(os.Environ(), "GOVC_URL="+u.String(), "GOVC_TLS_CA_CERTS="+sim.CAFile())
	start := func(t *testing.T, vm string, extra ...string) (*exec.Cmd, *lockedBuffer, string) {
		dir := t.TempDir()
		run := exec.Command(bin, append([]string{"run", scenarios[vm], "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--artifacts", dir}, extra...)...)
		run.Env = env
		out := &lockedBuffer{}
		run.Stdout, run.Stderr = out, out
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		return run, out, filepath.Join(dir, "journal.jsonl")
	}
	pendingAfter := func(t *testing.T, journal, vm, out string) {
		entries, err := engine.ReadJournal(journal)
		if err != nil || len(engine.Pending(entries)) != 1 {
			t.Errorf("journal: %v, %+v; want the fault pending", err, entries)
		}
		if !strings.Contains(out, "off/"+vm) || !strings.Contains(out, "still pending in journal "+journal+"; undo it with: faultline recover "+journal) {
			t.Errorf("the output does not say how to recover:\n%s", out)
		}
	}
	t.Run("timeout", func(t *testing.T) {
		began := time.Now()
		run, out, journal := start(t, "DC0_H0_VM0", "--timeout", "5s")
		err := run.Wait()
		took := time.Since(began)
		if exit, _ := err.(*exec.ExitError); exit == nil || exit.ExitCode() != exitInfra || took > 15*time.Second {
			t.Errorf("exit %v after %s, want 3 within 15 s\n%s", err, took.Round(time.Millisecond), out)
		}
		if !strings.Contains(out.String(), "waiting for clean-up: undo off/DC0_H0_VM0") {
			t.Errorf("no progress while the clean-up waits:\n%s", out)
		}
		pendingAfter(t, journal, "DC0_H0_VM0", out.String())
	})
	t.Run("second-interrupt", func(t *testing.T) {
		run, out, journal := start(t, "DC0_H0_VM1")
		waitFor(t, 30*time.Second, "the fault to be journaled", func() bool {
			entries, err := engine.ReadJournal(journal)
			return err == nil && len(engine.Pending(entries)) == 1 && strings.Contains(out.String(), "injected vm.power-off")
		})
		if err := run.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the clean-up to wait on the power-on", func() bool {
			return strings.Contains(out.String(), "waiting for clean-up: undo off/DC0_H0_VM1")
		})
		second := time.Now()
		if err := run.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err := run.Wait()
		if exit, _ := err.(*exec.ExitError); exit == nil || exit.ExitCode() != exitInfra || time.Since(second) > 3*time.Second {
			t.Errorf("exit %v %s after the second interrupt, want 3 at once\n%s", err, time.Since(second).Round(time.Millisecond), out)
		}
		if !strings.Contains(out.String(), "the clean-up was cut short (a second signal)") {
			t.Errorf("the output does not say the clean-up was cut short:\n%s", out)
		}
		pendingAfter(t, journal, "DC0_H0_VM1", out.String())
	})
}

// lockedBuffer is a bytes.Buffer a child process writes while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// vcsimURL starts a vcsim for the test and is its URL with a login in it
// (vcsim takes any).
func vcsimURL(t *testing.T) string {
	t.Helper()
	sim, err := lab.StartVCSim(lab.VCSimInput{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	u := sim.URL()
	u.User = url.UserPassword("user", "pass")
	return u.String()
}
