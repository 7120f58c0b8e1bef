package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

func (r *run) assert(ctx context.Context, name string, a scenario.Assert) error {
	began := time.Now()
	var ok bool
	var msg string
	var err error
	switch {
	case a.Within != nil:
		ok, msg = r.assertWithin(*a.Within)
	case a.Never != nil:
		ok, msg, err = r.assertWindow(ctx, name, *a.Never, false)
	case a.Consistently != nil:
		ok, msg, err = r.assertWindow(ctx, name, *a.Consistently, true)
	case a.Count != nil:
		ok, msg, err = r.assertCount(ctx, name, *a.Count)
	case a.Disruption != nil:
		ok, msg = r.assertDisruption(*a.Disruption)
	}
	if err != nil {
		return err
	}
	took := scenario.D(time.Since(began))
	r.addAssertion(AssertionResult{Name: name, OK: ok, Message: msg, Took: &took})
	what := "assertion-passed"
	if !ok {
		what = "assertion-failed"
		r.fail("assertion %s: %s", name, msg)
	}
	r.tl.Record("runner", "assert/"+name, what, map[string]string{"message": msg})
	return nil
}

func (r *run) assertWithin(w scenario.WithinAssertion) (bool, string) {
	at, reached := r.lookupAnchor(scenario.PhaseAnchor(w.Phase))
	from, ok := r.lookupAnchor(w.From)
	switch {
	case !reached:
		return false, fmt.Sprintf("phase %s was never reached (budget %s from %s)", w.Phase, w.Budget, anchorOrDefault(w.From))
	case !ok:
		return false, fmt.Sprintf("anchor %s was never reached", anchorOrDefault(w.From))
	}
	took := at.Sub(from)
	if took > w.Budget.Duration {
		return false, fmt.Sprintf("phase %s reached %s after %s, over its budget %s", w.Phase, took.Round(time.Millisecond), anchorOrDefault(w.From), w.Budget)
	}
	return true, fmt.Sprintf("phase %s reached %s after %s, within %s", w.Phase, took.Round(time.Millisecond), anchorOrDefault(w.From), w.Budget)
}

// assertWindow watches a condition for the window. want is the value the
// condition must have at every reading: false for never, true for
// consistently.
func (r *run) assertWindow(ctx context.Context, name string, w scenario.WindowAssertion, want bool) (bool, string, error) {
	start := time.Now()
	var broke *Observation
	var brokeAt time.Time
	readings, failed := 0, 0
	kind := map[bool]string{false: "never", true: "consistently"}[want]
	lastErr, err := r.watch(ctx, watchSpec{cond: w.Condition, deadline: start.Add(w.For.Duration), label: "assert " + name, start: start, budget: w.For.Duration, failed: &failed},
		func(o Observation, now time.Time) bool {
			readings++
			if o.Met != want {
				broke, brokeAt = &o, now
				return true
			}
			return false
		})
	switch {
	case broke != nil:
		verb := map[bool]string{false: "held", true: "stopped holding"}[want]
		return false, fmt.Sprintf("%s %s: %s %s after %s (%s)", kind, w.Condition.Probe, w.Condition.Probe, verb, brokeAt.Sub(start).Round(time.Millisecond), broke.Detail), nil
	case !errors.Is(err, errWindowOver):
		return false, "", fmt.Errorf("assert %s: %w", name, err)
	case readings == 0:
		return false, "", &providers.InfraError{Err: fmt.Errorf("assert %s: condition could not be read in the window: %v", name, lastErr)}
	case failed > 0:
		return false, "", &providers.InfraError{Err: fmt.Errorf("assert %s: %s %s is unproven: %d of %d readings in the window failed (last: %v)", name, kind, w.Condition.Probe, failed, failed+readings, lastErr)}
	}
	return true, fmt.Sprintf("%s %s for %s (%d readings)", kind, w.Condition.Probe, w.For, readings), nil
}

// assertCount counts occurrences in the window, as CountAssertion says.
func (r *run) assertCount(ctx context.Context, name string, c scenario.CountAssertion) (bool, string, error) {
	start := time.Now()
	count := 0
	baseline := -1           // objects satisfying the condition at the first reading
	var held map[string]bool // objects satisfying the condition at the last reading
	satisfied := func() bool {
		return (c.AtLeast == nil || count >= *c.AtLeast) && (c.AtMost == nil || count <= *c.AtMost)
	}
	_, err := r.watch(ctx, watchSpec{cond: c.Condition, deadline: start.Add(c.For.Duration), label: "assert " + name, start: start, budget: c.For.Duration},
		func(o Observation, now time.Time) bool {
			before := count
			current := map[string]bool{}
			for _, id := range o.Matched {
				current[id] = true
				// The first reading is the baseline; after it, an object
				// that starts satisfying the condition (or a new object
				// that does) is one occurrence.
				if held != nil && !held[id] {
					count++
				}
			}
			if held == nil {
				baseline = len(current)
			}
			held = current
			if count > before {
				r.tl.Record("runner", "assert/"+name, "occurrence", map[string]string{"count": fmt.Sprint(count), "detail": o.Detail})
			}
			// Only a lower bound can be settled before the window ends.
			return c.AtMost == nil && satisfied()
		})
	if err != nil && !errors.Is(err, errWindowOver) {
		return false, "", fmt.Errorf("assert %s: %w", name, err)
	}
	bounds := []string{}
	if c.AtLeast != nil {
		bounds = append(bounds, fmt.Sprintf("at least %d", *c.AtLeast))
	}
	if c.AtMost != nil {
		bounds = append(bounds, fmt.Sprintf("at most %d", *c.AtMost))
	}
	msg := fmt.Sprintf("%d occurrence(s) of %s in %s; expected %s", count, c.Condition.Probe, time.Since(start).Round(time.Millisecond), strings.Join(bounds, " and "))
	// What already held when the window opened is not an occurrence; say
	// so, or a 0 looks like a probe that never matched.
	if baseline > 0 {
		msg += fmt.Sprintf(" (%d matching object(s) already held at the window's first reading and are not counted)", baseline)
	}
	return satisfied(), msg, nil
}

// addAssertion records an assertion's result.
func (r *run) addAssertion(res AssertionResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Assertions = append(r.res.Assertions, res)
}

func (r *run) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
