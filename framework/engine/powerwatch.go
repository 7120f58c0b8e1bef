package engine

import (
	"context"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/providers"
)

// powerWatchEvery is how often a VM faultline powered off is read while
// its fault holds.
const powerWatchEvery = 250 * time.Millisecond

// powerWatches are the watches of the VMs a run powered off: each ends
// once its fault is closed, or with the run (stop).
type powerWatches struct {
	wg   sync.WaitGroup
	stop context.CancelFunc
	ctx  context.Context
}

// Who powers a VM on that faultline powered off, in the timeline.
const (
	byOwner = "not faultline: the VM's owner (CAPV powers on a VM it finds off)"
	byHA    = "not faultline: vSphere HA, which restarts a failed host's VMs on another host"
)

// watchPower watches obj, which fault f powered off, until f is closed:
// when another hand powers it back on first (CAPV powers on a VM it finds
// off whenever it reconciles the VSphereVM), the timeline records
// vm-powered-on, by the provider, and the progress shows it. A VM the
// provider cannot read the power of is not watched.
func (r *run) watchPower(obj providers.Object, f *activeFault, by string) {
	power, err := providers.As[providers.VMPower](r.in.Provider, providers.CapVMPower)
	if err != nil {
		return
	}
	r.mu.Lock()
	if r.powers.ctx == nil {
		r.powers.ctx, r.powers.stop = context.WithCancel(context.Background())
	}
	ctx := r.powers.ctx
	r.mu.Unlock()
	r.powers.wg.Add(1)
	// A provider that notifies changes (providers.Watcher) is read at
	// once, else at the next tick.
	var changed <-chan struct{}
	if w, ok := r.in.Provider.(providers.Watcher); ok {
		if ch, err := w.Watch(ctx, obj); err == nil {
			changed = ch
		}
	}
	go func() {
		defer r.powers.wg.Done()
		t := time.NewTicker(powerWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-changed:
				if !ok {
					changed = nil // the watch broke: polling goes on
				}
			case <-t.C:
			}
			r.mu.Lock()
			done := f.done
			r.mu.Unlock()
			if done {
				return
			}
			st, err := power.PowerState(ctx, obj)
			if err != nil || st != providers.PoweredOn {
				continue
			}
			r.mu.Lock()
			done = f.done || f.undoing
			r.mu.Unlock()
			if !done {
				r.tl.Record(r.in.Provider.Name(), obj.String(), "vm-powered-on", map[string]string{"id": f.result.ID, "by": by})
			}
			return
		}
	}()
}

// stopPowerWatches ends the watches and waits for them.
func (r *run) stopPowerWatches() {
	r.mu.Lock()
	stop := r.powers.stop
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	r.powers.wg.Wait()
}
