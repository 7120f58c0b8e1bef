package vsphere_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// TestIntegrationHostFail fails the host of one of vcsim's cluster VMs
// over SOAP: its VMs go off, the host is disconnected, vCenter (the lab's
// rules) refuses to power them on, and RestoreHost brings the host and its
// VMs back.
func TestIntegrationHostFail(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_C0_RP0_VM0"})
	host, on, err := p.HostOf(ctx, vm)
	if err != nil {
		t.Fatal(err)
	}
	if host.Kind != "HostSystem" || !strings.HasPrefix(host.Name, "DC0_C0_H") || !containsVM(on, vm.ID) {
		t.Fatalf("HostOf(%s) = %+v, %v; want a host of cluster DC0_C0 running it", vm.Name, host, on)
	}
	vms := strings.Split(host.Attributes[providers.AttrVMs], ",")
	if len(vms) != len(on) {
		t.Errorf("AttrVMs %v, down %v", vms, on)
	}
	// A target may name the host: the VMs on it.
	if byHost, err := p.Resolve(ctx, providers.Selector{Host: host.Name}); err != nil || !containsVM(byHost, vm.ID) {
		t.Errorf("Resolve(host %s) = %v, %v; want %s among them", host.Name, byHost, err, vm.Name)
	}
	if err := p.FailHost(ctx, host, vms); err != nil {
		t.Fatal(err)
	}
	for _, o := range on {
		if st, err := p.PowerState(ctx, o); err != nil || st != providers.PoweredOff {
			t.Errorf("%s after the host failed: %s, %v; want poweredOff", o.Name, st, err)
		}
	}
	if st := state(t, p, host).ConnectionState; st != types.HostSystemConnectionStateDisconnected {
		t.Errorf("host %s is %s, want disconnected", host.Name, st)
	}
	var fe *vsphere.FaultError
	if err := p.PowerOn(ctx, vm); !errors.As(err, &fe) || fe.Fault != "HostNotConnected" {
		t.Errorf("power on %s on the failed host: %v; want vCenter's HostNotConnected", vm.Name, err)
	}

	if err := p.RestoreHost(ctx, host, vms); err != nil {
		t.Fatal(err)
	}
	if st := state(t, p, host).ConnectionState; st != types.HostSystemConnectionStateConnected {
		t.Errorf("host %s is %s after RestoreHost, want connected", host.Name, st)
	}
	for _, o := range on {
		if st, err := p.PowerState(ctx, o); err != nil || st != providers.PoweredOn {
			t.Errorf("%s after RestoreHost: %s, %v; want poweredOn", o.Name, st, err)
		}
	}
	// Undoing twice (a recovery replaying the journal) is no error.
	if err := p.RestoreHost(ctx, host, vms); err != nil {
		t.Errorf("second RestoreHost: %v", err)
	}
}

func containsVM(objs []providers.Object, id string) bool {
	for _, o := range objs {
		if o.ID == id {
			return true
		}
	}
	return false
}

// TestIntegrationHostMaintenance: maintenance mode migrates the VMs of a
// cluster's host, running, to another host, and powers off those of a
// standalone host (nowhere to go); leaving it powers those back on.
func TestIntegrationHostMaintenance(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	for _, tc := range []struct {
		vm      string
		running bool
	}{{"DC0_C0_RP0_VM0", true}, {"DC0_H0_VM0", false}} {
		vm := resolveOne(t, ctx, p, providers.Selector{VM: tc.vm})
		host, on, err := p.HostOf(ctx, vm)
		if err != nil {
			t.Fatal(err)
		}
		vms := strings.Split(host.Attributes[providers.AttrVMs], ",")
		if err := p.EnterMaintenance(ctx, host, vms); err != nil {
			t.Fatalf("%s: %v", host.Name, err)
		}
		if !state(t, p, host).InMaintenanceMode {
			t.Errorf("host %s is not in maintenance mode", host.Name)
		}
		for _, o := range on {
			st, err := p.PowerState(ctx, o)
			now, _, herr := p.HostOf(ctx, o)
			switch {
			case err != nil || herr != nil:
				t.Errorf("%s: %v %v", o.Name, err, herr)
			case tc.running && (st != providers.PoweredOn || now.ID == host.ID):
				t.Errorf("%s after maintenance of %s: %s on %s; want running on another host", o.Name, host.Name, st, now.Name)
			case !tc.running && st != providers.PoweredOff:
				t.Errorf("%s on standalone host %s: %s; want shut down (nowhere to migrate)", o.Name, host.Name, st)
			}
		}
		if err := p.ExitMaintenance(ctx, host, vms); err != nil {
			t.Fatal(err)
		}
		if state(t, p, host).InMaintenanceMode {
			t.Errorf("host %s still in maintenance mode", host.Name)
		}
		for _, o := range on {
			if st, err := p.PowerState(ctx, o); err != nil || st != providers.PoweredOn {
				t.Errorf("%s after maintenance ended: %s, %v", o.Name, st, err)
			}
		}
	}
}

func state(t *testing.T, p *vsphere.Provider, host providers.Object) types.HostRuntimeInfo {
	t.Helper()
	st, err := p.HostState(t.Context(), host)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
