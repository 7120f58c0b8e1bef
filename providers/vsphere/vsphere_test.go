package vsphere_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// startSim starts a vcsim on loopback with TLS for one test.
func startSim(t *testing.T) *lab.VCSim {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs an in-process vcsim")
	}
	// A guest shuts down in a second here, not a real guest's 15 s.
	sim, err := lab.StartVCSim(lab.VCSimInput{GuestShutdown: time.Second})
	if err != nil {
		t.Fatalf("start vcsim: %v", err)
	}
	t.Cleanup(sim.Close)
	return sim
}

func connect(t *testing.T, ctx context.Context, cfg vsphere.Config) *vsphere.Provider {
	t.Helper()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return p
}

func resolveOne(t *testing.T, ctx context.Context, p *vsphere.Provider, sel providers.Selector) providers.Object {
	t.Helper()
	objs, err := p.Resolve(ctx, sel)
	if err != nil || len(objs) != 1 {
		t.Fatalf("Resolve(%+v) = %v, %v; want one VM", sel, objs, err)
	}
	return objs[0]
}

func TestIntegrationResolve(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())

	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM0"})
	uuid := vm.Attributes["uuid"]
	if uuid == "" || vm.ID == "" {
		t.Fatalf("vm = %+v, want an ID and a BIOS UUID", vm)
	}
	if got := resolveOne(t, ctx, p, providers.Selector{UUID: uuid}); got.ID != vm.ID {
		t.Errorf("by uuid: %+v, want %s", got, vm.ID)
	}
	if got := resolveOne(t, ctx, p, providers.Selector{ProviderID: "vsphere://" + uuid}); got.ID != vm.ID {
		t.Errorf("by providerID: %+v, want %s", got, vm.ID)
	}
	all, err := p.Resolve(ctx, providers.Selector{VM: "DC0_*"})
	if err != nil || len(all) != 4 {
		t.Errorf("glob DC0_* = %d VMs, %v; want the 4 of simulator.VPX()", len(all), err)
	}
	none, err := p.Resolve(ctx, providers.Selector{VM: "no-such-vm"})
	if err != nil || len(none) != 0 {
		t.Errorf("missing vm = %v, %v; want no match and no error", none, err)
	}
	if _, err := p.Resolve(ctx, providers.Selector{Role: "worker"}); !errors.Is(err, providers.ErrUnsupported) {
		t.Errorf("role selector = %v, want ErrUnsupported", err)
	}
	if _, err := p.Resolve(ctx, providers.Selector{ProviderID: "aws:///i-1"}); err == nil {
		t.Error("non-vSphere providerID accepted")
	}
}

// TestIntegrationListVMs: the inventory check's view of simulator.VPX(),
// a powered-off VM read as such, and each VM's host.
func TestIntegrationListVMs(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM1"})
	if err := p.PowerOff(ctx, vm); err != nil {
		t.Fatal(err)
	}
	vms, err := p.ListVMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vms {
		names = append(names, string(v.PowerState)+" "+v.Name)
		if v.UUID == "" {
			t.Errorf("%s has no UUID", v.Name)
		}
		if v.Name == vm.Name && v.UUID != vm.Attributes["uuid"] {
			t.Errorf("%s: UUID %s, Resolve says %s", v.Name, v.UUID, vm.Attributes["uuid"])
		}
		// vcsim's standalone host's VMs run on it; the cluster's on one
		// of its hosts (the check of control planes sharing a host).
		if strings.HasPrefix(v.Name, "DC0_H0_") && v.Host != "DC0_H0" || strings.HasPrefix(v.Name, "DC0_C0_") && !strings.HasPrefix(v.Host, "DC0_C0_H") {
			t.Errorf("%s runs on host %q", v.Name, v.Host)
		}
	}
	want := "poweredOn DC0_C0_RP0_VM0, poweredOn DC0_C0_RP0_VM1, poweredOn DC0_H0_VM0, poweredOff DC0_H0_VM1"
	if got := strings.Join(names, ", "); got != want {
		t.Errorf("ListVMs = %s, want %s", got, want)
	}
}

func TestIntegrationFaults(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM1"})

	state := func(want providers.PowerState) {
		t.Helper()
		got, err := p.PowerState(ctx, vm)
		if err != nil || got != want {
			t.Fatalf("power state = %s, %v; want %s", got, err, want)
		}
	}
	steps := []struct {
		name string
		do   func(context.Context, providers.Object) error
		want providers.PowerState
	}{
		{"power off", p.PowerOff, providers.PoweredOff},
		{"power on", p.PowerOn, providers.PoweredOn},
		{"suspend", p.Suspend, providers.Suspended},
		{"power on after suspend", p.PowerOn, providers.PoweredOn},
		{"reset", p.Reset, providers.PoweredOn},
		{"shutdown guest", p.ShutdownGuest, providers.PoweredOff},
	}
	for _, s := range steps {
		if err := s.do(ctx, vm); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.name == "shutdown guest" {
			// The guest shuts down asynchronously, as on a real VM.
			waitState(t, ctx, p, vm, s.want)
			continue
		}
		state(s.want)
	}

	// A fault vCenter refuses names the VM and the vSphere fault.
	err := p.PowerOff(ctx, vm)
	var fe *vsphere.FaultError
	if !errors.As(err, &fe) || fe.Fault != "InvalidPowerState" || !strings.Contains(err.Error(), `power off vm "DC0_H0_VM1": vSphere fault InvalidPowerState`) {
		t.Errorf("power off of an off VM = %v, want a named InvalidPowerState fault", err)
	}

	if err := p.SetNICConnected(ctx, vm, "", false); err != nil {
		t.Fatalf("disconnect nic: %v", err)
	}
	if on, err := p.NICConnected(ctx, vm, "ethernet-0"); err != nil || on {
		t.Errorf("nic connected = %t, %v after disconnect", on, err)
	}
	if err := p.SetNICConnected(ctx, vm, "Network adapter 9", true); !errors.Is(err, providers.ErrNotFound) || !strings.Contains(err.Error(), "it has: ") {
		t.Errorf("unknown nic = %v, want ErrNotFound listing the adapters", err)
	}

	if err := p.Destroy(ctx, vm); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if ok, err := p.Exists(ctx, vm); err != nil || ok {
		t.Errorf("exists after destroy = %t, %v", ok, err)
	}
	if _, err := p.PowerState(ctx, vm); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("power state of a destroyed VM = %v, want ErrNotFound", err)
	}
}

// waitState waits on the provider's watch, bounded by a deadline.
func waitState(t *testing.T, ctx context.Context, p *vsphere.Provider, vm providers.Object, want providers.PowerState) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	changes, err := p.Watch(ctx, vm)
	if err != nil {
		t.Fatal(err)
	}
	for {
		got, err := p.PowerState(ctx, vm)
		if err == nil && got == want {
			return
		}
		select {
		case <-changes:
		case <-ctx.Done():
			t.Fatalf("vm never reached %s (last %s, %v)", want, got, err)
		}
	}
}

// TestIntegrationDestroyRetries plays the owner that powers a VM back on
// between Destroy's power-off and its destroy (CAPV does, in the lab
// within a second): vCenter refuses the destroy with InvalidPowerState,
// as vcsim's fault rule does here, and Destroy powers off and retries, up
// to its bound, then names the fault.
func TestIntegrationDestroyRetries(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	// refuse decides each Destroy_Task on the VM: the rule's filter is
	// called once per call that matches the method and VM.
	var calls atomic.Int32
	refuse := func(first int32) {
		sim.Service().ClearFaultRules()
		calls.Store(0)
		sim.Service().AddFaultRule(&simulator.FaultInjectionRule{
			MethodName: "Destroy_Task", ObjectType: "VirtualMachine", ObjectName: "*",
			InclusionPropertyFilter: func(mo.Reference) bool { return calls.Add(1) <= first },
			Probability:             1, FaultType: simulator.FaultTypeCustom, Fault: &types.InvalidPowerState{}, Enabled: true,
		})
	}

	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM0"})
	refuse(1)
	if err := p.Destroy(ctx, vm); err != nil {
		t.Fatalf("destroy refused once: %v, want the retry to destroy it", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("destroy refused once: %d destroy calls, want 2", n)
	}
	if ok, err := p.Exists(ctx, vm); err != nil || ok {
		t.Errorf("exists after a retried destroy = %t, %v", ok, err)
	}

	vm = resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM1"})
	refuse(1 << 20)
	err := p.Destroy(ctx, vm)
	var fe *vsphere.FaultError
	if !errors.As(err, &fe) || fe.Fault != "InvalidPowerState" || !strings.Contains(err.Error(), `destroy vm "DC0_H0_VM1"`) || !strings.Contains(err.Error(), "each of 5 times") {
		t.Errorf("destroy refused every time = %v, want the InvalidPowerState fault after 5 rounds", err)
	}
	if n := calls.Load(); n != 5 {
		t.Errorf("destroy refused every time: %d destroy calls, want 5", n)
	}
	sim.Service().ClearFaultRules()
	if state, err := p.PowerState(ctx, vm); err != nil || state != providers.PoweredOff {
		t.Errorf("after the refused destroys the VM is %s, %v; want it left powered off", state, err)
	}
}

// TestIntegrationFaultRules drives vcsim's fault injection: a PowerOff task
// that fails, and one that is slower than its deadline.
func TestIntegrationFaultRules(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM0"})

	sim.Service().AddFaultRule(&simulator.FaultInjectionRule{
		MethodName: "PowerOffVM_Task", ObjectType: "VirtualMachine", ObjectName: "DC0_H0_VM0",
		Probability: 1, FaultType: simulator.FaultTypeNoPermission, Message: "denied by test", Enabled: true,
	})
	err := p.PowerOff(ctx, vm)
	var fe *vsphere.FaultError
	if !errors.As(err, &fe) || fe.Fault != "NoPermission" || !strings.Contains(err.Error(), `power off vm "DC0_H0_VM0"`) {
		t.Fatalf("power off under a NoPermission rule = %v, want a named NoPermission fault", err)
	}
	// Rules are cleared rather than limited with MaxCount: govmomi v0.53.0
	// reads a rule's count without the write lock, a data race under -race.
	sim.Service().ClearFaultRules()

	sim.Service().AddFaultRule(&simulator.FaultInjectionRule{
		MethodName: "PowerOffVM_Task", ObjectType: "VirtualMachine", ObjectName: "DC0_H0_VM0",
		Probability: 1, FaultType: simulator.FaultTypeTimeout, Delay: 5000, Enabled: true,
	})
	deadline := 500 * time.Millisecond
	dctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()
	err = p.PowerOff(dctx, vm)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `power off vm "DC0_H0_VM0"`) {
		t.Errorf("slow power off = %v, want a deadline error naming the VM", err)
	}
	if took > deadline+2*time.Second {
		t.Errorf("slow power off returned after %s, long past its %s deadline", took, deadline)
	}
}

func TestIntegrationTLS(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	cfg := sim.Config()
	cfg.Password = "s3cret-planted"

	noCA := cfg
	noCA.CAFile = ""
	_, err := vsphere.New(ctx, noCA)
	if err == nil || !strings.Contains(err.Error(), "TLS verification failed") || !strings.Contains(err.Error(), "--vcenter-ca-file") {
		t.Errorf("connect without a CA = %v, want a TLS verification error with the fix", err)
	}
	if err != nil && strings.Contains(err.Error(), cfg.Password) {
		t.Error("error leaks the password")
	}

	insecure := noCA
	insecure.Insecure = true
	connect(t, ctx, insecure)

	connect(t, ctx, cfg)
	withURLPassword := cfg
	withURLPassword.Username, withURLPassword.Password = "", ""
	u := sim.URL()
	withURLPassword.URL = "https://user:s3cret-planted@" + u.Host + u.Path
	p := connect(t, ctx, withURLPassword)
	ref := p.Ref()
	for k, v := range ref.Config {
		if strings.Contains(v, "s3cret") {
			t.Errorf("ProviderRef %s=%q holds the password", k, v)
		}
	}
	if s := withURLPassword.String(); strings.Contains(s, "s3cret") {
		t.Errorf("Config.String() = %q holds the password", s)
	}

	// The certificate vCenter presented is its recorded identity, and
	// recover pins TLS to it whatever insecure the journal says.
	tp, err := certThumbprint(cfg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := vsphere.RecordOf(ref.Config)
	if rec.ServerThumbprint != tp || ref.Target == "" || strings.Contains(ref.Target, "s3cret") {
		t.Errorf("recorded thumbprint %q, target %q; want the certificate's %q and the URL without its password", rec.ServerThumbprint, ref.Target, tp)
	}
	rec.Insecure = true
	rec, _ = vsphere.RecordOf(rec.Ref().Config)
	if rc := rec.RecoverConfig(vsphere.Config{}); rc.Insecure || rc.Thumbprint != tp {
		t.Errorf("recover's config: insecure %t, thumbprint %q; want verified against %q", rc.Insecure, rc.Thumbprint, tp)
	}
	pinned := noCA
	pinned.Thumbprint = tp
	connect(t, ctx, pinned)

	// A thumbprint given must match even when the CA file verifies.
	wrong := cfg
	wrong.Thumbprint = strings.Repeat("AB:", 31) + "AB"
	if _, err := vsphere.New(ctx, wrong); err == nil || !strings.Contains(err.Error(), "not the thumbprint given") {
		t.Errorf("a CA that verifies and a thumbprint that does not match: %v, want refused", err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{vsphere.EnvURL: "vc.example.com", vsphere.EnvUsername: "admin", vsphere.EnvPassword: "pw", vsphere.EnvInsecure: "maybe"}
	if _, err := vsphere.ConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "GOVC_INSECURE") {
		t.Errorf("GOVC_INSECURE=maybe: %v, want an error naming it", err)
	}
	tests := []struct {
		url, want, wantErr string
	}{
		{url: "vc.example.com", want: "https://vc.example.com/sdk"},
		{url: "https://u:p@vc.example.com:8443", want: "https://vc.example.com:8443/sdk"},
		{url: "", wantErr: "vCenter URL is empty"},
		{url: "ftp://vc", wantErr: `scheme "ftp"`},
		{url: "https://u:hunter2@:443/sdk", wantErr: "has no host"},
		{url: "https://u:hunter2@vc.example.com:bad", wantErr: "is not a URL"},
	}
	for _, tt := range tests {
		u, err := vsphere.Config{URL: tt.url}.Endpoint()
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Endpoint(%q) = %v, want error %q without the password", tt.url, err, tt.wantErr)
			}
		case err != nil || u.String() != tt.want:
			t.Errorf("Endpoint(%q) = %v, %v; want %s", tt.url, u, err, tt.want)
		}
	}
}

func TestIntegrationKnownHosts(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	u := sim.URL()
	thumb, err := certThumbprint(sim.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(u.Host+" "+thumb+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config()
	cfg.CAFile, cfg.KnownHostsFile = "", kh
	connect(t, ctx, cfg)
}

// A read-only session (a dry run's) reads the inventory over SOAP and
// refuses, before the request leaves, every method that creates a task.
func TestIntegrationReadOnly(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p, err := vsphere.New(ctx, sim.Config(), vsphere.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM1"})
	for name, do := range map[string]func(context.Context, providers.Object) error{"power off": p.PowerOff, "reset": p.Reset, "destroy": p.Destroy} {
		if err := do(ctx, vm); !errors.Is(err, vsphere.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	rw := connect(t, ctx, sim.Config())
	if got, err := rw.PowerState(ctx, vm); err != nil || got != providers.PoweredOn {
		t.Errorf("after the refused calls the VM is %s (%v), want poweredOn and still there", got, err)
	}
}

// A session vCenter ends under a run (idle expiry; here an administrator's
// TerminateSession) is made again: the undo's power-on succeeds.
func TestIntegrationSessionLost(t *testing.T) {
	ctx := t.Context()
	p, vm, s := offThenSessionLost(t)
	if err := p.PowerOn(ctx, vm); err != nil {
		t.Fatalf("power on after the session was terminated: %v", err)
	}
	if state, err := p.PowerState(ctx, vm); err != nil || state != providers.PoweredOn {
		t.Errorf("the VM is %s, %v; want poweredOn", state, err)
	}
	if s2, err := session.NewManager(p.Client()).UserSession(ctx); err != nil || s2 == nil || s2.Key == s.Key {
		t.Errorf("the session after: %v %v, want a new one", s2, err)
	}
}

// TestIntegrationSessionLostBeforeRead: vCenter ends the run's session
// while the VM is off (its idle expiry, an administrator), and the first
// call after it is a read, as an undo's power-state read is: it logs in
// again and answers, and the undo's power-on then works.
func TestIntegrationSessionLostBeforeRead(t *testing.T) {
	ctx := t.Context()
	p, vm, _ := offThenSessionLost(t)
	if state, err := p.PowerState(ctx, vm); err != nil || state != providers.PoweredOff {
		t.Fatalf("the first read after the session was terminated: %s, %v; want poweredOff", state, err)
	}
	if err := p.PowerOn(ctx, vm); err != nil {
		t.Fatalf("power on: %v", err)
	}
	if state, err := p.PowerState(ctx, vm); err != nil || state != providers.PoweredOn {
		t.Errorf("the VM is %s, %v; want poweredOn", state, err)
	}
}

// offThenSessionLost powers a VM off through a provider of its own, then
// ends that provider's session as an administrator would: it returns the
// provider, the VM and the session that was ended.
func offThenSessionLost(t *testing.T) (*vsphere.Provider, providers.Object, *types.UserSession) {
	t.Helper()
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	admin := connect(t, ctx, sim.Config())
	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM0"})
	if err := p.PowerOff(ctx, vm); err != nil {
		t.Fatal(err)
	}
	s, err := session.NewManager(p.Client()).UserSession(ctx)
	if err != nil || s == nil {
		t.Fatalf("the run's session: %v %v", s, err)
	}
	if err := session.NewManager(admin.Client()).TerminateSession(ctx, []string{s.Key}); err != nil {
		t.Fatal(err)
	}
	return p, vm, s
}
