//go:build ignore

// envoy stands in for the Envoy image kind runs as the API server load
// balancer of a cluster with several control planes (no registry serves it
// here; hack/kind-image.sh builds this and tags it with kind's image name).
// It reads what kind writes: envoy -c FILE names the CDS and LDS files
// (path_config_source); the LDS file gives the listener's port, the CDS
// file the API servers. It proxies TCP round robin to the API servers whose
// /healthz answered, checked every 2s and dropped after 2 failures, as
// kind's Envoy config asks. Like Envoy's, the health check accepts any
// certificate (kind's trust_chain_verification: ACCEPT_UNTRUSTED); it
// only decides where to send traffic, and the proxied TLS is end to end.
package main

import (
	"crypto/tls"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var (
	pathRE     = regexp.MustCompile(`(?m)^\s*path:\s*(\S+)`)
	endpointRE = regexp.MustCompile(`address:\s*"?([^"\s]+)"?\s*\n\s*port_value:\s*(\d+)`)
)

type balancer struct {
	mu      sync.Mutex
	servers []string
	healthy map[string]bool
	fails   map[string]int
	next    atomic.Uint64
}

func main() {
	config := flag.String("c", "", "bootstrap config")
	flag.Parse()
	raw, err := os.ReadFile(*config)
	if err != nil {
		log.Fatal(err)
	}
	paths := pathRE.FindAllStringSubmatch(string(raw), -1)
	if len(paths) != 2 {
		log.Fatalf("%s: expected a CDS and an LDS path", *config)
	}
	cds, lds := paths[0][1], paths[1][1]
	b := &balancer{healthy: map[string]bool{}, fails: map[string]int{}}
	var listening string
	for {
		if raw, err := os.ReadFile(cds); err == nil {
			var servers []string
			for _, m := range endpointRE.FindAllStringSubmatch(string(raw), -1) {
				servers = append(servers, net.JoinHostPort(m[1], m[2]))
			}
			b.mu.Lock()
			b.servers = servers
			b.mu.Unlock()
		}
		if listening == "" {
			if raw, err := os.ReadFile(lds); err == nil {
				if m := endpointRE.FindStringSubmatch(string(raw)); m != nil {
					listening = net.JoinHostPort(m[1], m[2])
					ln, err := net.Listen("tcp", listening)
					if err != nil {
						log.Fatal(err)
					}
					log.Printf("listening on %s", listening)
					go b.serve(ln)
				}
			}
		}
		b.check()
		time.Sleep(2 * time.Second)
	}
}

// check asks every API server's /healthz at once, as Envoy runs one health
// checker per host: a server that hangs until the 3 s timeout (one shutting
// down may) does not delay the verdict on the others. Asked one after the
// other, every hanging server lengthened the round by 3 s, and new
// connections kept going to a dying server for that much longer (CI saw
// kind-remove-apiserver-pods' API unreachable for its 20 s budget while a
// server still ran). Each round's connections are closed after it.
func (b *balancer) check() {
	b.mu.Lock()
	servers := append([]string(nil), b.servers...)
	b.mu.Unlock()
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func(s string) {
			defer wg.Done()
			resp, err := client.Get("https://" + s + "/healthz")
			ok := err == nil && resp.StatusCode == http.StatusOK
			if resp != nil {
				resp.Body.Close()
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			switch {
			case ok:
				b.fails[s] = 0
				b.healthy[s] = true
			default:
				b.fails[s]++
				if b.fails[s] >= 2 {
					b.healthy[s] = false
				}
			}
		}(s)
	}
	wg.Wait()
	client.CloseIdleConnections()
}

// pick returns the servers to try, healthy ones first, in round-robin order.
func (b *balancer) pick() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.servers)
	var healthy, rest []string
	start := int(b.next.Add(1))
	for i := 0; i < n; i++ {
		s := b.servers[(start+i)%n]
		if b.healthy[s] {
			healthy = append(healthy, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(healthy, rest...)
}

func (b *balancer) serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go b.proxy(conn)
	}
}

func (b *balancer) proxy(in net.Conn) {
	defer in.Close()
	for _, s := range b.pick() {
		out, err := net.DialTimeout("tcp", s, 250*time.Millisecond)
		if err != nil {
			continue
		}
		defer out.Close()
		done := make(chan struct{}, 2)
		go func() { io.Copy(out, in); done <- struct{}{} }()
		go func() { io.Copy(in, out); done <- struct{}{} }()
		<-done
		return
	}
	log.Printf("no API server to send a connection to (%s)", strconv.Itoa(len(b.pick())))
}
