package vcsim

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	// The vCenter REST API (sessions, tags), which CAPV logs in to.
	_ "github.com/vmware/govmomi/vapi/simulator"

	"github.com/faultline-dev/faultline/providers/vsphere"
)

// Sim is an in-process vCenter simulator listening on loopback with TLS.
type Sim struct {
	model  *simulator.Model
	server *simulator.Server
	caFile string
	// placement is SetPlacement's, by group; groups is each cloned VM's
	// group, by name.
	mu        sync.Mutex
	placement map[string]Placement
	groups    map[string]string
	// gate is CAPV's way in (Gate).
	gate *Gate
	// shutdown is Input.GuestShutdown; taskTime Input.VMTaskTime, and
	// releaseTaskTime gives the process's task time back (holdTaskTime).
	shutdown        time.Duration
	taskTime        time.Duration
	releaseTaskTime func()
}

// Input configures Start.
type Input struct {
	// Listen is a loopback host:port; "127.0.0.1:0" (any free port) when
	// empty. Other addresses are refused: the lab never listens beyond the
	// machine.
	Listen string
	// Model is the inventory to simulate; simulator.VPX() (one datacenter,
	// a cluster, hosts and four powered-on VMs) when nil.
	Model *simulator.Model
	// SessionIdle is how long a session may go without a call before
	// vCenter ends it (vCenter's default, 30m, when zero; vcsim's own
	// sessions never expire).
	SessionIdle time.Duration
	// GuestShutdown is how long a guest takes to shut down once asked
	// (ShutdownGuest returns at once, the VM powers off then; vcsim's
	// powers off at once). Zero is DefaultGuestShutdown.
	GuestShutdown time.Duration
	// VMTaskTime is how long a VM's task (power on or off, reset,
	// suspend, reconfigure, relocate, destroy) runs before it completes;
	// while one runs, another task on the VM is refused with
	// TaskInProgress, as vCenter refuses it. Zero: vcsim's own, done at
	// once. govmomi keeps task delays process-wide: the simulators of one
	// process have one VMTaskTime.
	VMTaskTime time.Duration
}

// The realism settings' defaults: a vCenter ends a session idle for 30
// minutes; a Linux guest running a kubelet and its containers takes
// seconds to stop them and power off.
const (
	DefaultSessionIdle   = 30 * time.Minute
	DefaultGuestShutdown = 15 * time.Second
)

// Validate checks the input.
func (in Input) Validate() error {
	if in.Listen == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(in.Listen)
	if err != nil {
		return fmt.Errorf("listen address %q: expected host:port: %w", in.Listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q: the lab listens on loopback only (127.0.0.1)", in.Listen)
	}
	return nil
}

// createMu makes one Model.Create at a time in the process: it writes
// package-level state of govmomi's simulator (the evaluation license the
// LicenseManager of every model shares), and two labs or tests starting
// at once raced on it.
var createMu sync.Mutex

// Start creates the inventory and starts serving it.
func Start(in Input) (*Sim, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	release, err := holdTaskTime(in.VMTaskTime)
	if err != nil {
		return nil, err
	}
	v, err := start(in)
	if err != nil {
		release()
		return nil, err
	}
	v.taskTime, v.releaseTaskTime = in.VMTaskTime, release
	return v, nil
}

func start(in Input) (*Sim, error) {
	m := in.Model
	if m == nil {
		m = simulator.VPX()
	}
	createMu.Lock()
	err := m.Create()
	createMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("create vcsim inventory: %w", err)
	}
	v := &Sim{model: m, placement: map[string]Placement{}, groups: map[string]string{}, shutdown: cmp.Or(in.GuestShutdown, DefaultGuestShutdown)}
	m.Map().Handler = v.hostRules
	m.Map().OptionManager().Setting = append(m.Map().OptionManager().Setting,
		&types.OptionValue{Key: "config.vmacore.soap.sessionTimeout", Value: cmp.Or(in.SessionIdle, DefaultSessionIdle).String()})
	listen := in.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	m.Service.Listen = &url.URL{Host: listen}
	cert, err := loopbackCert()
	if err != nil {
		m.Remove()
		return nil, err
	}
	m.Service.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	m.Service.RegisterEndpoints = true
	s := m.Service.NewServer()
	ca, err := s.CertificateFile()
	if err != nil {
		s.Close()
		m.Remove()
		return nil, fmt.Errorf("write vcsim certificate: %w", err)
	}
	v.server, v.caFile = s, ca
	if v.gate, err = openGate(s.URL.Host); err != nil {
		s.Close()
		m.Remove()
		return nil, err
	}
	return v, nil
}

// URL is the SDK endpoint, without credentials: through the gate, the
// address the lab's clusters name and users are given.
func (v *Sim) URL() *url.URL { return v.gate.URL(v.DirectURL()) }

// DirectURL is the SDK endpoint the simulator itself listens on, which the
// gate does not cut: the lab's own provider's, which faults and reads
// vCenter while CAPV's way is cut (vcenter.unreachable).
func (v *Sim) DirectURL() *url.URL {
	u := *v.server.URL
	u.User = nil
	return &u
}

// Gate is the relay the lab's clusters reach the simulator through, for
// CAPV; URL is faultline's own way in.
func (v *Sim) Gate() *Gate { return v.gate }

// CAFile is the PEM file of the simulator's certificate, for verifying TLS.
func (v *Sim) CAFile() string { return v.caFile }

// Outside is what the simulator made in $TMPDIR, which its Close removes:
// its home (datastores) and its certificate file.
func (v *Sim) Outside() []string {
	out := []string{v.caFile}
	for _, o := range v.model.Service.Context.Map.OptionManager().Setting {
		if ov := o.GetOptionValue(); ov.Key == "vcsim.home" {
			if home, ok := ov.Value.(string); ok {
				out = append(out, home)
			}
		}
	}
	return out
}

// Service exposes the simulator, for fault rules and delays in tests.
func (v *Sim) Service() *simulator.Service { return v.model.Service }

// Username is the user every simulator takes (govmomi's
// simulator.DefaultLogin), known before one starts.
var Username = simulator.DefaultLogin.Username()

// Password is Username's password.
func Password() string {
	pass, _ := simulator.DefaultLogin.Password() // set: url.UserPassword
	return pass
}

// Config returns vsphere settings that reach the simulator, through the
// gate, with TLS verified against its own certificate.
func (v *Sim) Config() vsphere.Config {
	return vsphere.Config{URL: v.URL().String(), Username: Username, Password: Password(), CAFile: v.caFile}
}

// DirectConfig is Config at DirectURL.
func (v *Sim) DirectConfig() vsphere.Config {
	c := v.Config()
	c.URL = v.DirectURL().String()
	return c
}

// SetGuestIP plays the guest's DHCP client and VMware Tools: it reports
// ip on the VM's first adapter in guest.net (with its IP configuration,
// which CAPV reads), in guest.ipAddress and in the summary (what govc
// vm.info shows), with Tools running, and notifies property collectors,
// as Tools would. vcsim has no API for this; its object is changed in
// process.
func (v *Sim) SetGuestIP(ref types.ManagedObjectReference, ip string) error {
	base := v.model.Service.Context
	vm, ok := base.Map.Get(ref).(*simulator.VirtualMachine)
	if !ok {
		return fmt.Errorf("vm %s is not in the simulator", ref)
	}
	ctx := &simulator.Context{Context: context.Background(), Map: base.Map, Session: base.Session}
	var err error
	ctx.WithLock(vm, func() {
		if vm.Guest == nil || len(vm.Guest.Net) == 0 {
			err = fmt.Errorf("vm %s has no network adapter", ref)
			return
		}
		nets := append([]types.GuestNicInfo(nil), vm.Guest.Net...)
		nets[0].IpAddress = []string{ip}
		nets[0].IpConfig = &types.NetIpConfigInfo{IpAddress: []types.NetIpConfigInfoIpAddress{{IpAddress: ip, PrefixLength: 24, State: "preferred"}}}
		running := string(types.VirtualMachineToolsRunningStatusGuestToolsRunning)
		ctx.Update(vm, []types.PropertyChange{
			{Name: "guest.net", Val: nets}, {Name: "guest.ipAddress", Val: ip}, {Name: "summary.guest.ipAddress", Val: ip},
			{Name: "guest.toolsRunningStatus", Val: running}, {Name: "summary.guest.toolsRunningStatus", Val: running},
			{Name: "guest.toolsStatus", Val: types.VirtualMachineToolsStatusToolsOk}, {Name: "summary.guest.toolsStatus", Val: types.VirtualMachineToolsStatusToolsOk},
			{Name: "guest.guestState", Val: "running"},
		})
	})
	return err
}

// closeWait bounds how long Close waits for handlers to return once their
// connections are closed.
const closeWait = 3 * time.Second

// Close stops the server and removes the inventory, within a few seconds
// whatever the clients do: their connections are closed first (a client
// that holds a request half sent, or waits in WaitForUpdates, would
// otherwise keep httptest's Close waiting for as long as it likes). A
// handler that still has not returned after closeWait is left behind, and
// so is the inventory it may be using.
func (v *Sim) Close() {
	v.gate.close()
	v.server.CloseClientConnections()
	done := make(chan struct{})
	go func() {
		v.server.Close()
		close(done)
	}()
	select {
	case <-done:
		v.model.Remove()
	case <-time.After(closeWait):
	}
	// The server removes it only once its handlers return.
	_ = os.Remove(v.caFile)
	v.releaseTaskTime()
}

// loopbackCert is an ECDSA P-256 certificate for 127.0.0.1 and localhost,
// signed by the lab's CA when TrustLabCertificates made one (the system's
// roots then trust it), self-signed otherwise. httptest's default is RSA
// 2048; with ECDSA each handshake's signature costs a fraction of RSA's.
func loopbackCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("vcsim certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("vcsim certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "faultline lab vcsim"},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:    []string{"localhost"},
	}
	parent, parentKey := tmpl, key
	if ca, caKey := signedByLabCA(); ca != nil {
		tmpl.KeyUsage, tmpl.IsCA = x509.KeyUsageDigitalSignature, false
		parent, parentKey = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("vcsim certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
