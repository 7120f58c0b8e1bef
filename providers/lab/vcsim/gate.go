package vcsim

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
)

// Gate is the network path from CAPV to the simulator: a TCP relay on
// loopback that the lab's clusters are given as their vCenter's address,
// and that faultline cuts to put vCenter out of CAPV's reach
// (vcenter.unreachable) while its own provider still reaches it. Cut, it
// closes every connection it relays and refuses new ones at once (a
// reset, as a firewall that rejects does).
type Gate struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// openGate starts a relay on 127.0.0.1 to target (host:port).
func openGate(target string) (*Gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("vCenter gate: %w", err)
	}
	g := &Gate{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	g.wg.Add(1)
	go g.serve()
	return g, nil
}

func (g *Gate) serve() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		g.mu.Lock()
		if g.cut {
			g.mu.Unlock()
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
			continue
		}
		g.conns[c] = struct{}{}
		g.wg.Add(1)
		g.mu.Unlock()
		go g.relay(c)
	}
}

// relay copies between c and a new connection to the target until either
// side closes, or the gate is cut.
func (g *Gate) relay(c net.Conn) {
	defer g.wg.Done()
	defer g.drop(c)
	up, err := net.Dial("tcp", g.target)
	if err != nil {
		return
	}
	g.mu.Lock()
	if g.cut {
		g.mu.Unlock()
		_ = up.Close()
		return
	}
	g.conns[up] = struct{}{}
	g.mu.Unlock()
	defer g.drop(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (g *Gate) drop(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	_ = c.Close()
}

// URL is the simulator's SDK endpoint through the gate.
func (g *Gate) URL(sdk *url.URL) *url.URL {
	u := *sdk
	u.Host = g.ln.Addr().String()
	return &u
}

// SetReachable opens the gate, or cuts it: every relayed connection is
// closed and new ones are refused until it opens again.
func (g *Gate) SetReachable(reachable bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = !reachable
	if reachable {
		return
	}
	for c := range g.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
}

// Reachable tells whether the gate is open.
func (g *Gate) Reachable() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.cut
}

// close stops the relay and its connections.
func (g *Gate) close() {
	_ = g.ln.Close()
	g.SetReachable(false)
	g.wg.Wait()
}
