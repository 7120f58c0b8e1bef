package vsphere_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// TestIntegrationCanceledTask: a run cut short (Ctrl-C, SIGTERM) while
// its power-off waits at vCenter. govmomi's Task.Wait returns nil when
// its context ends, and the power-off used to count as done with the
// task still queued: the clean-up read the VM on, journaled nothing to
// undo, and vCenter then powered it off for good. Now the call waits for
// its task by reference, says it was cut short (never a success) and
// how the task ended, and returns only once the VM is in the state the
// task left.
//
// vcsim's TaskDelay holds every power-off 2s, as a busy vCenter queues
// it; it is process-wide, so the test is not parallel.
func TestIntegrationCanceledTask(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	watcher := connect(t, ctx, sim.Config())
	vm := resolveOne(t, ctx, p, providers.Selector{VM: "DC0_H0_VM0"})
	simulator.TaskDelay.MethodDelay = map[string]int{"PowerOff": 2000, "LockHandoff": 0}
	t.Cleanup(func() { simulator.TaskDelay.MethodDelay = nil })

	before := recentTasks(t, ctx, watcher, vm)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.PowerOff(runCtx, vm) }()
	// Cut the run short once vCenter has the task.
	deadline := time.Now().Add(10 * time.Second)
	for recentTasks(t, ctx, watcher, vm) == before {
		if time.Now().After(deadline) {
			t.Fatal("no power-off task appeared at vCenter within 10s")
		}
		select {
		case err := <-done:
			t.Fatalf("the power-off returned before its task was seen: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	err := <-done
	if err == nil {
		t.Fatal("a power-off cut short by its context returned success")
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "which then succeeded") {
		t.Errorf("error %q: want it cut short (context.Canceled) and the task's success said", err)
	}
	if state, err := watcher.PowerState(ctx, vm); err != nil || state != providers.PoweredOff {
		t.Errorf("when the power-off returned, the VM was %s (%v); want poweredOff, the state its task left", state, err)
	}
}

// recentTasks counts the tasks vCenter lists as the VM's recent ones.
func recentTasks(t *testing.T, ctx context.Context, p *vsphere.Provider, vm providers.Object) int {
	t.Helper()
	var o mo.VirtualMachine
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: vm.ID}
	if err := property.DefaultCollector(p.Client()).RetrieveOne(ctx, ref, []string{"recentTask"}, &o); err != nil {
		t.Fatalf("read the VM's recent tasks: %v", err)
	}
	return len(o.RecentTask)
}
