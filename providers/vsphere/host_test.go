package vsphere_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// TestIntegrationHostFail fails the host of one of vcsim's cluster VMs
// over SOAP: its VMs go off, the host is disconnected, vCenter (the lab's
// rules) refuses to power them on, a clone lands on another host, and
// RestoreHost brings the host and its VMs back.
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
	if err := p.FailHost(ctx, host, vms); err != nil {
		t.Fatal(err)
	}
	for _, o := range on {
		if st, err := p.PowerState(ctx, o); err != nil || st != providers.PoweredOff {
			t.Errorf("%s after the host failed: %s, %v; want poweredOff", o.Name, st, err)
		}
	}
	if st := connection(t, ctx, p, host); st != types.HostSystemConnectionStateDisconnected {
		t.Errorf("host %s is %s, want disconnected", host.Name, st)
	}
	var fe *vsphere.FaultError
	if err := p.PowerOn(ctx, vm); !errors.As(err, &fe) || fe.Fault != "HostNotConnected" {
		t.Errorf("power on %s on the failed host: %v; want vCenter's HostNotConnected", vm.Name, err)
	}

	// A VM cloned into the cluster meanwhile (from a VM of the
	// standalone host, which is up) is placed on a connected host.
	other := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM0"})
	clone := cloneInto(t, ctx, p, other, vm, "placed-while-down")
	if h, _, err := p.HostOf(ctx, clone); err != nil || h.ID == host.ID || !strings.HasPrefix(h.Name, "DC0_C0_H") {
		t.Errorf("clone placed on %s (%v); want a host of DC0_C0 other than the failed %s", h.Name, err, host.Name)
	}

	if err := p.RestoreHost(ctx, host, vms); err != nil {
		t.Fatal(err)
	}
	if st := connection(t, ctx, p, host); st != types.HostSystemConnectionStateConnected {
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

func connection(t *testing.T, ctx context.Context, p *vsphere.Provider, host providers.Object) types.HostSystemConnectionState {
	t.Helper()
	var h mo.HostSystem
	ref := types.ManagedObjectReference{Type: "HostSystem", Value: host.ID}
	if err := property.DefaultCollector(p.Client()).RetrieveOne(ctx, ref, []string{"runtime.connectionState"}, &h); err != nil {
		t.Fatal(err)
	}
	return h.Runtime.ConnectionState
}

// cloneInto clones from into the resource pool and folder of like with
// no host named, as CAPV clones.
func cloneInto(t *testing.T, ctx context.Context, p *vsphere.Provider, from, like providers.Object, name string) providers.Object {
	t.Helper()
	src := object.NewVirtualMachine(p.Client(), types.ManagedObjectReference{Type: "VirtualMachine", Value: from.ID})
	var v mo.VirtualMachine
	if err := src.Properties(ctx, types.ManagedObjectReference{Type: "VirtualMachine", Value: like.ID}, []string{"resourcePool", "parent"}, &v); err != nil {
		t.Fatal(err)
	}
	task, err := src.Clone(ctx, object.NewFolder(p.Client(), *v.Parent), name, types.VirtualMachineCloneSpec{Location: types.VirtualMachineRelocateSpec{Pool: v.ResourcePool}})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatalf("clone: %v", err)
	}
	return resolveOne(t, ctx, p, providers.Selector{VM: name})
}
