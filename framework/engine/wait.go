package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// Poll intervals: the default when a scenario sets none, and the floor, so
// a scenario cannot hammer a vCenter.
// watchSpec is what one watch reads, until when, and how it is reported.
type watchSpec struct {
	cond     scenario.Condition
	deadline time.Time
	// label, start and budget feed progress reports.
	label  string
	start  time.Time
	budget time.Duration
	// failed, when set, counts the readings that failed: a window that
	// must hold throughout (consistently, never, a guard) proves nothing
	// where it could not read.
	failed *int
}

// errWindowOver ends a watch whose own deadline passed, as opposed to the
// step or scenario deadline, which end it with the context's error.
var errWindowOver = errors.New("window over")

// watch reads cond over objs until see returns true, the deadline passes
// (errWindowOver) or ctx ends (ctx.Err()). It reads once at once, then on
// every provider notification and every poll tick. A probe error does not
// end the watch: the next reading may succeed; the last error is returned
// alongside errWindowOver so a caller can tell "never held" from "never
// readable".
func (r *run) watch(ctx context.Context, w watchSpec, see func(Observation, time.Time) bool) (lastErr error, err error) {
	cond, deadline := w.cond, w.deadline
	objs := r.objects[cond.Target]
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	notify := r.notifications(wctx, objs)
	tick := time.NewTicker(r.poll)
	defer tick.Stop()
	for {
		obs, evalErr := r.evaluate(wctx, cond, objs)
		now := time.Now()
		if !deadline.IsZero() && now.After(deadline) && ctx.Err() == nil {
			// A reading that came back after the window closed (a slow
			// read on a loaded machine) says nothing about the window:
			// counted, a phase would be reached past its budget.
			return lastErr, errWindowOver
		}
		switch {
		case errors.Is(evalErr, providers.ErrNotAuthenticated):
			// Refused credentials do not come back by waiting.
			r.tl.Record("runner", cond.Target, "probe-error", map[string]string{"probe": cond.Probe, "error": evalErr.Error()})
			return evalErr, &providers.InfraError{Err: evalErr}
		case evalErr == nil && !obs.Upto.IsZero() && obs.Upto.Before(w.start):
			// A reading of a time before the window (a workload's measure
			// whose newer samples wait for their answers) says nothing
			// about it: a phase from an undo would be reached by the
			// requests that succeeded before the undo.
			lastErr = nil
		case evalErr == nil:
			lastErr = nil
			at := now
			if obs.At.After(w.start) && obs.At.Before(now) {
				at = obs.At
			}
			if see(obs, at) {
				return nil, nil
			}
		case wctx.Err() == nil && !cutByDeadline(evalErr):
			if lastErr == nil {
				r.tl.Record("runner", cond.Target, "probe-error", map[string]string{"probe": cond.Probe, "error": evalErr.Error()})
			}
			lastErr = evalErr
			if w.failed != nil {
				*w.failed++
			}
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return lastErr, ctx.Err()
			}
			return lastErr, errWindowOver
		case <-tick.C:
		case <-notify:
		}
		if r.in.Progress != nil {
			r.in.Progress(Progress{Waiting: w.label, Elapsed: time.Since(w.start), Budget: w.budget})
		}
	}
}

// cutByDeadline tells whether a reading failed because its wait's deadline
// was near, not because of what it read: client-go's rate limiter refuses
// a request whose wait would pass the deadline while the context is still
// live.
func cutByDeadline(err error) bool {
	return strings.Contains(err.Error(), "would exceed context deadline")
}

// notifications merges the provider's change notifications for objs into
// one channel. Without a Watcher, or if a watch fails, it returns a channel
// that never fires and the poll ticker does the work.
func (r *run) notifications(ctx context.Context, objs []providers.Object) <-chan struct{} {
	out := make(chan struct{}, 1)
	w, ok := r.in.Provider.(providers.Watcher)
	if !ok {
		return out
	}
	for _, obj := range objs {
		ch, err := w.Watch(ctx, obj)
		if err != nil {
			r.in.Log.V(1).Info("watch failed, polling instead", "object", obj.String(), "error", err.Error())
			continue
		}
		go func() {
			for range ch {
				select {
				case out <- struct{}{}:
				default: // a notification is already queued
				}
			}
		}()
	}
	return out
}

// Progress tells a front end what the runner is waiting for.
type Progress struct {
	// Waiting names the phase or assertion being watched.
	Waiting string
	Elapsed time.Duration
	// Budget is the time allowed, or 0 when unbounded by a budget.
	Budget time.Duration
}
