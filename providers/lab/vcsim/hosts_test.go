package vcsim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

func startWithProvider(t *testing.T) (*vcsim.Sim, *vsphere.Provider) {
	t.Helper()
	return startWith(t, vcsim.Input{})
}

// startWith starts a simulator of in and a vsphere provider logged in to
// it, both ended with the test.
func startWith(t *testing.T, in vcsim.Input) (*vcsim.Sim, *vsphere.Provider) {
	t.Helper()
	sim, err := vcsim.Start(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	p, err := vsphere.New(t.Context(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return sim, p
}

func resolve(t *testing.T, p *vsphere.Provider, name string) providers.Object {
	t.Helper()
	objs, err := p.Resolve(t.Context(), providers.Selector{VM: name})
	if err != nil || len(objs) != 1 {
		t.Fatalf("resolve %s: %v %v", name, objs, err)
	}
	return objs[0]
}

// cloneInto clones from into the resource pool and folder of like with no
// host named, in placement group group (as CAPV clones a machine
// template's VM with its custom VMX keys), and returns the host it landed
// on.
func cloneInto(t *testing.T, p *vsphere.Provider, from, like providers.Object, name, group string) string {
	t.Helper()
	ctx := t.Context()
	src := object.NewVirtualMachine(p.Client(), types.ManagedObjectReference{Type: "VirtualMachine", Value: from.ID})
	var v mo.VirtualMachine
	if err := src.Properties(ctx, types.ManagedObjectReference{Type: "VirtualMachine", Value: like.ID}, []string{"resourcePool", "parent"}, &v); err != nil {
		t.Fatal(err)
	}
	spec := types.VirtualMachineCloneSpec{Location: types.VirtualMachineRelocateSpec{Pool: v.ResourcePool}}
	if group != "" {
		spec.Config = &types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{&types.OptionValue{Key: vcsim.PlacementKey, Value: group}}}
	}
	task, err := src.Clone(ctx, object.NewFolder(p.Client(), *v.Parent), name, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatalf("clone %s: %v", name, err)
	}
	host, _, err := p.HostOf(ctx, resolve(t, p, name))
	if err != nil {
		t.Fatal(err)
	}
	return host.Name
}

// TestIntegrationPlacement: clones into the cluster's pool land on its
// hosts (vcsim alone puts them on their source's host), a group set to
// spread on three hosts, one set together on one, and none on a host that
// is down.
func TestIntegrationPlacement(t *testing.T) {
	sim, p := startWithProvider(t)
	src, like := resolve(t, p, "DC0_H0_VM0"), resolve(t, p, "DC0_C0_RP0_VM0")
	sim.SetPlacement("ns/spread", vcsim.Placement{Policy: vcsim.Spread})
	sim.SetPlacement("ns/together", vcsim.Placement{Policy: vcsim.Together})
	sim.SetPlacement("ns/two", vcsim.Placement{Policy: vcsim.Spread, Hosts: 2})
	spread, together, two := map[string]bool{}, map[string]bool{}, map[string]int{}
	for i := range 3 {
		spread[cloneInto(t, p, src, like, fmt.Sprintf("spread-%d", i), "ns/spread")] = true
		together[cloneInto(t, p, src, like, fmt.Sprintf("together-%d", i), "ns/together")] = true
		two[cloneInto(t, p, src, like, fmt.Sprintf("two-%d", i), "ns/two")]++
	}
	if len(spread) != 3 || len(together) != 1 || two["DC0_C0_H0"] != 2 || two["DC0_C0_H1"] != 1 {
		t.Errorf("spread on %v, together on %v, two hosts' group on %v; want 3 hosts, 1, and 2 on DC0_C0_H0 and 1 on DC0_C0_H1", spread, together, two)
	}
	for h := range together {
		host, on, err := p.HostOf(t.Context(), resolve(t, p, "together-0"))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range on {
			ids = append(ids, o.ID)
		}
		if err := p.FailHost(t.Context(), host, ids); err != nil {
			t.Fatal(err)
		}
		if got := cloneInto(t, p, src, like, "after-failure", ""); got == h {
			t.Errorf("a clone landed on %s, which is down", h)
		}
	}
}

// TestIntegrationRestartElsewhere: HA's restart moves a VM of a failed
// host to another host, powers it on and posts HA's event; the host lists
// follow; a VM whose host is back is left alone.
func TestIntegrationRestartElsewhere(t *testing.T) {
	sim, p := startWithProvider(t)
	ctx := t.Context()
	vm := resolve(t, p, "DC0_C0_RP0_VM0")
	host, on, err := p.HostOf(ctx, vm)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, o := range on {
		ids = append(ids, o.ID)
	}
	if err := p.FailHost(ctx, host, ids); err != nil {
		t.Fatal(err)
	}
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: vm.ID}
	to, err := sim.RestartElsewhere(ref)
	if err != nil || to == "" || to == host.Name {
		t.Fatalf("RestartElsewhere = %q, %v; want another host than %s", to, err, host.Name)
	}
	if st, err := p.PowerState(ctx, vm); err != nil || st != providers.PoweredOn {
		t.Errorf("%s after HA's restart: %s, %v", vm.Name, st, err)
	}
	now, on2, err := p.HostOf(ctx, vm)
	if err != nil || now.Name != to || len(on2) == 0 {
		t.Errorf("HostOf after the restart: %s, %v, %v; want %s", now.Name, on2, err, to)
	}
	if _, down, _ := p.HostOf(ctx, vm); down == nil {
		t.Error("no VM on the new host")
	}
	events, err := event.NewManager(p.Client()).QueryEvents(ctx, types.EventFilterSpec{EventTypeId: []string{"VmRestartedOnAlternateHostEvent"}})
	if err != nil || len(events) != 1 || events[0].GetEvent().Vm == nil || events[0].GetEvent().Vm.Name != vm.Name {
		t.Errorf("HA's events: %v, %v; want one for %s", events, err, vm.Name)
	}
	if to, err := sim.RestartElsewhere(ref); err != nil || to != "" {
		t.Errorf("second RestartElsewhere of a running VM = %q, %v; want nothing done", to, err)
	}
}

// TestIntegrationGuestShutdownTakesTime: ShutdownGuest returns at once and
// the VM is still on; it is off once the guest's shutdown time has passed.
func TestIntegrationGuestShutdownTakesTime(t *testing.T) {
	_, p := startWith(t, vcsim.Input{GuestShutdown: 2 * time.Second})
	ctx := t.Context()
	vm := resolve(t, p, "DC0_H0_VM0")
	asked := time.Now()
	if err := p.ShutdownGuest(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if st, err := p.PowerState(ctx, vm); err != nil || st != providers.PoweredOn {
		t.Errorf("right after ShutdownGuest: %s, %v; want still poweredOn (the guest is shutting down)", st, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		st, err := p.PowerState(ctx, vm)
		return st == providers.PoweredOff, err
	})
	if took := time.Since(asked); err != nil || took < 2*time.Second {
		t.Errorf("powered off %s after the shutdown was asked (%v); want about 2s", took, err)
	}
}

// TestIntegrationSessionExpires: a session idle for longer than vCenter's
// timeout is ended (a call with it is refused NotAuthenticated), and the
// vsphere provider logs in again on its own.
func TestIntegrationSessionExpires(t *testing.T) {
	_, p := startWith(t, vcsim.Input{SessionIdle: time.Second})
	ctx := t.Context()
	vm := resolve(t, p, "DC0_H0_VM0")
	sm := session.NewManager(p.Client())
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 20*time.Second, false, func(ctx context.Context) (bool, error) {
		active, err := sm.SessionIsActive(ctx)
		return err != nil || !active, nil
	})
	if err != nil {
		t.Fatalf("the session was never ended: %v", err)
	}
	if st, err := p.PowerState(ctx, vm); err != nil || st != providers.PoweredOn {
		t.Errorf("a call after the session ended: %s, %v; want the provider to log in again", st, err)
	}
}
