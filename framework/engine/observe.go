package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// observe watches every phase of the step at once, and its guards until the
// phases are settled.
func (r *run) observe(ctx context.Context, o scenario.Observe) error {
	gctx, stopGuards := context.WithCancel(ctx)
	var guards sync.WaitGroup
	for _, g := range o.While {
		guards.Add(1)
		go func() {
			defer guards.Done()
			r.guard(gctx, ctx, g)
		}()
	}
	defer func() {
		stopGuards()
		guards.Wait()
	}()
	var wg sync.WaitGroup
	errs := make([]error, len(o.Phases))
	for i, ph := range o.Phases {
		r.mu.Lock()
		r.phaseIdx[ph.Name] = len(r.res.Phases)
		r.res.Phases = append(r.res.Phases, PhaseResult{Name: ph.Name, From: anchorOrDefault(ph.From)})
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.phase(ctx, ph)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// guard checks a condition at every reading until gctx ends (the phases are
// settled). A reading cut short by that end is not a failure.
func (r *run) guard(gctx, stepCtx context.Context, g scenario.Guard) {
	start := time.Now()
	deadline, ok := stepCtx.Deadline()
	if !ok {
		deadline = start.Add(scenario.DefaultTimeout)
	}
	var broke *Observation
	var brokeAt time.Time
	readings, failed := 0, 0
	lastErr, _ := r.watch(gctx, watchSpec{cond: g.Condition, deadline: deadline, label: "guard " + g.Name, start: start, failed: &failed},
		func(o Observation, now time.Time) bool {
			readings++
			if !o.Met {
				broke, brokeAt = &o, now
				return true
			}
			return false
		})
	var res AssertionResult
	switch {
	case broke != nil:
		res = AssertionResult{Name: g.Name, Message: fmt.Sprintf("while %s: stopped holding after %s (%s)", g.Condition.Probe, brokeAt.Sub(start).Round(time.Millisecond), broke.Detail)}
	case readings == 0:
		res = AssertionResult{Name: g.Name, Message: fmt.Sprintf("while %s: never read: %v", g.Condition.Probe, lastErr)}
	case failed > 0:
		res = AssertionResult{Name: g.Name, Message: fmt.Sprintf("while %s: unproven: %d of %d readings failed (last: %v)", g.Condition.Probe, failed, failed+readings, lastErr)}
	default:
		res = AssertionResult{Name: g.Name, OK: true, Message: fmt.Sprintf("while %s: held for %s (%d readings)", g.Condition.Probe, time.Since(start).Round(time.Millisecond), readings)}
	}
	took := scenario.D(time.Since(start))
	res.Took = &took
	r.addAssertion(res)
	what := "assertion-passed"
	if !res.OK {
		what = "assertion-failed"
		r.fail("guard %s: %s", g.Name, res.Message)
	}
	r.tl.Record("runner", "guard/"+g.Name, what, map[string]string{"message": res.Message})
}

func anchorOrDefault(a scenario.Anchor) scenario.Anchor { return a.OrDefault() }

// setAnchorLocked records when a happened and wakes the phases waiting on
// an anchor. r.mu is held.
func (r *run) setAnchorLocked(a scenario.Anchor, at time.Time) {
	r.anchors[a] = at
	r.wakeLocked()
}

// missLocked records that phase anchor a will never be reached. r.mu is
// held.
func (r *run) missLocked(a scenario.Anchor) {
	r.missed[a] = true
	r.wakeLocked()
}

func (r *run) wakeLocked() {
	close(r.anchored)
	r.anchored = make(chan struct{})
}

// lookupAnchor returns when an anchor happened, if it has. "inject" before
// any injection is the start of the run.
func (r *run) lookupAnchor(a scenario.Anchor) (time.Time, bool) {
	a = anchorOrDefault(a)
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.anchors[a]
	if a == scenario.AnchorInject && !ok {
		return r.anchors[scenario.AnchorStart], true
	}
	return t, ok
}

// anchorTime is lookupAnchor for a phase that may be reached concurrently:
// it waits for a phase anchor, woken as each anchor is set or phase
// missed, until ctx ends.
func (r *run) anchorTime(ctx context.Context, a scenario.Anchor) (time.Time, bool) {
	for {
		r.mu.Lock()
		woken, missed := r.anchored, r.missed[a]
		r.mu.Unlock()
		t, ok := r.lookupAnchor(a)
		if _, isPhase := a.Phase(); ok || missed || !isPhase {
			return t, ok
		}
		select {
		case <-ctx.Done():
			return time.Time{}, false
		case <-woken:
		}
	}
}

// anchorMissed records ph as missed because its anchor never came: a
// failure, unless the run ended before it (interrupted, timed out), which
// cuts ph short with it.
func (r *run) anchorMissed(ctx context.Context, ph scenario.Phase) error {
	msg := fmt.Sprintf("anchor %s was never reached", anchorOrDefault(ph.From))
	cut := cutShort(ctx, ctx.Err(), true)
	if cut == "" {
		cut = r.anchorCut(ph.From)
	}
	if cut != "" {
		msg = fmt.Sprintf("not reached: %s before its anchor %s", cut, anchorOrDefault(ph.From))
	}
	r.mu.Lock()
	p := &r.res.Phases[r.phaseIdx[ph.Name]]
	p.Message, p.Cut = msg, cut
	r.missLocked(scenario.PhaseAnchor(ph.Name))
	r.mu.Unlock()
	if cut != "" {
		return fmt.Errorf("phase %s: %w", ph.Name, errCut{cut})
	}
	r.fail("phase %s: %s", ph.Name, msg)
	return nil
}

// anchorCut is why the phase a names as an anchor was cut short, "" when
// a names no phase or the phase was not cut.
func (r *run) anchorCut(a scenario.Anchor) Verdict {
	name, isPhase := a.Phase()
	if !isPhase {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.phaseIdx[name]; ok {
		return r.res.Phases[i].Cut
	}
	return ""
}

// errCut is a wait ended by an interruption or the scenario's timeout.
type errCut struct{ why Verdict }

func (e errCut) Error() string { return string(e.why) }

// cutShort tells why a wait that ended with err was cut short: Interrupted
// when the caller's context was cancelled, TimedOut when the scenario's
// deadline passed (err is ctx's, or the window that ended was the
// scenario's: byScenario); "" when it ended by itself.
func cutShort(ctx context.Context, err error, byScenario bool) Verdict {
	switch {
	case err == nil:
		return ""
	case errors.Is(ctx.Err(), context.Canceled):
		return Interrupted
	case errors.Is(ctx.Err(), context.DeadlineExceeded), byScenario && errors.Is(err, errWindowOver):
		return TimedOut
	}
	return ""
}

func (r *run) phase(ctx context.Context, ph scenario.Phase) error {
	update := func(f func(*PhaseResult)) {
		r.mu.Lock()
		defer r.mu.Unlock()
		f(&r.res.Phases[r.phaseIdx[ph.Name]])
	}
	from, ok := r.anchorTime(ctx, ph.From)
	if !ok {
		return r.anchorMissed(ctx, ph)
	}
	update(func(p *PhaseResult) { at := from; p.AnchorAt = &at })
	deadline, hasDeadline := ctx.Deadline()
	// byScenario: the phase's window ends with the scenario's, not with
	// its budget; its end is then the scenario timing out.
	byScenario := hasDeadline
	var budget time.Duration
	if ph.Within.Duration > 0 {
		budget = ph.Within.Duration
		update(func(p *PhaseResult) { b := ph.Within; p.Budget = &b })
		if !hasDeadline || from.Add(budget).Before(deadline) {
			deadline, byScenario = from.Add(budget), false
		}
	} else if !hasDeadline {
		deadline = time.Now().Add(scenario.DefaultTimeout)
	}
	var seen Observation
	var at time.Time
	lastErr, err := r.watch(ctx, watchSpec{cond: ph.When, deadline: deadline, label: "phase " + ph.Name, start: from, budget: budget},
		func(o Observation, now time.Time) bool {
			seen = o
			if o.Met {
				at = now
			}
			return o.Met
		})
	if cut := cutShort(ctx, err, byScenario); cut != "" {
		msg := fmt.Sprintf("not reached: %s after %s of %s (last seen: %s)", cut, time.Since(from).Round(time.Millisecond), anchorOrDefault(ph.From), seen.Detail)
		update(func(p *PhaseResult) { p.Message, p.Cut = msg, cut })
		r.mu.Lock()
		r.missLocked(scenario.PhaseAnchor(ph.Name))
		r.mu.Unlock()
		r.tl.Record("runner", "phase/"+ph.Name, "phase-cut", map[string]string{"message": msg, "cut": string(cut)})
		return fmt.Errorf("phase %s: %w", ph.Name, errCut{cut})
	}
	if err != nil {
		msg := fmt.Sprintf("not reached within %s of %s (last seen: %s)", time.Since(from).Round(time.Millisecond), anchorOrDefault(ph.From), seen.Detail)
		if budget > 0 && errors.Is(err, errWindowOver) {
			msg = fmt.Sprintf("not reached within its budget %s of %s (last seen: %s)", budget, anchorOrDefault(ph.From), seen.Detail)
		}
		if lastErr != nil {
			msg += "; last probe error: " + lastErr.Error()
		}
		update(func(p *PhaseResult) { p.Message = msg })
		r.mu.Lock()
		r.missLocked(scenario.PhaseAnchor(ph.Name))
		r.mu.Unlock()
		r.tl.Record("runner", "phase/"+ph.Name, "phase-missed", map[string]string{"message": msg})
		if lastErr != nil && errors.Is(err, errWindowOver) {
			return &providers.InfraError{Err: fmt.Errorf("phase %s: %s", ph.Name, msg)}
		}
		if errors.Is(err, errWindowOver) {
			r.fail("phase %s %s", ph.Name, msg)
			return nil
		}
		return fmt.Errorf("phase %s: %w", ph.Name, err)
	}
	r.reached(ph, from, at, seen, update)
	return nil
}

// reached stamps phase ph reached at at, seen since its anchor's time from.
func (r *run) reached(ph scenario.Phase, from, at time.Time, seen Observation, update func(func(*PhaseResult))) {
	r.mu.Lock()
	r.setAnchorLocked(scenario.PhaseAnchor(ph.Name), at)
	firstInject := r.firstInject
	r.mu.Unlock()
	sinceAnchor := scenario.D(at.Sub(from))
	details := map[string]string{"sinceAnchor": sinceAnchor.String(), "from": string(anchorOrDefault(ph.From)), "detail": seen.Detail}
	if !ph.Within.IsZero() {
		details["budget"] = ph.Within.String()
	}
	update(func(p *PhaseResult) {
		p.ObservedAt = &at
		p.SinceAnchor = &sinceAnchor
		p.OK = true
		p.Seen = seen.Detail
		if !firstInject.IsZero() {
			d := scenario.D(at.Sub(firstInject))
			p.SinceInject = &d
		}
	})
	r.tl.Record("runner", "phase/"+ph.Name, "phase-reached", details)
}
