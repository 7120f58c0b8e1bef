package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

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
	sim, err := lab.StartVCSim(lab.VCSimInput{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	u := sim.URL()
	u.User = url.UserPassword("user", "pass") // vcsim takes any login
	var out, errOut bytes.Buffer
	code := execute([]string{"run", "vm-power-cycle", "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--vcenter-insecure",
		"--vcenter-url", u.String(), "--dry-run", "--artifacts", t.TempDir()}, &out, &errOut)
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
