package vsphere_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/providers"
)

// TestIntegrationTasksAtOnce powers every VM of the simulator off, and on
// again, through one session, all at once, as runs side by side do on one
// lab: each task is waited on to its end, none hangs and none waits for
// another's update. With the session's one property collector shared by
// the waits, a round here hung or failed most times.
func TestIntegrationTasksAtOnce(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	p := connect(t, ctx, sim.Config())
	vms, err := p.Resolve(ctx, providers.Selector{VM: "DC0_*"})
	if err != nil || len(vms) < 2 {
		t.Fatalf("Resolve = %d VMs, %v; want several", len(vms), err)
	}
	ops := []struct {
		name string
		do   func(context.Context, providers.Object) error
		want providers.PowerState
	}{{"power off", p.PowerOff, providers.PoweredOff}, {"power on", p.PowerOn, providers.PoweredOn}}
	for round := range 10 {
		for _, op := range ops {
			var wg sync.WaitGroup
			errs := make([]error, len(vms))
			for i, vm := range vms {
				wg.Go(func() {
					opCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
					defer cancel()
					errs[i] = op.do(opCtx, vm)
				})
			}
			wg.Wait()
			for i, vm := range vms {
				if errs[i] != nil {
					t.Fatalf("round %d: %s %s: %v", round, op.name, vm.Name, errs[i])
				}
				if got, err := p.PowerState(ctx, vm); err != nil || got != op.want {
					t.Fatalf("round %d: after %s, %s is %s (%v)", round, op.name, vm.Name, got, err)
				}
			}
		}
	}
}
