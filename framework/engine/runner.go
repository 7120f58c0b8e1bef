package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// CleanupTimeout bounds clean-up, which runs after the scenario's own
// context has ended.
const CleanupTimeout = 5 * time.Minute

// RunInput is what Run needs.
type RunInput struct {
	Scenario *scenario.Scenario
	Provider providers.Provider
	// Journal receives every fault before it is applied. Required.
	Journal *Journal
	// Timeline receives every event; a memory-only one is made when nil.
	Timeline *Timeline
	// Parameters are recorded in the result (the scenario already has them
	// substituted).
	Parameters map[string]string
	// Retain leaves injected faults in place at the end (for inspecting a
	// broken cluster); the journal keeps them pending for recover.
	Retain bool
	// BackupDir is where faults that delete or replace objects keep their
	// backups, a folder per inject step; "backups" beside the journal when
	// empty.
	BackupDir string
	// Progress, when set, is called while the runner waits.
	Progress func(Progress)
	Log      logr.Logger
}

// Validate checks the input.
func (in RunInput) Validate() error {
	var errs []error
	if in.Scenario == nil {
		errs = append(errs, errors.New("scenario is required"))
	}
	if in.Provider == nil {
		errs = append(errs, errors.New("provider is required"))
	}
	if in.Journal == nil {
		errs = append(errs, errors.New("journal is required: faults are journaled before they are applied"))
	}
	return errors.Join(errs...)
}

// run is the state of one scenario run.
type run struct {
	in   RunInput
	tl   *Timeline
	res  *Result
	poll time.Duration

	objects map[string][]providers.Object

	mu      sync.Mutex
	anchors map[scenario.Anchor]time.Time
	// firstInject is the origin of every SinceInject; zero until a fault
	// is applied. The latest injection is anchors["inject"].
	firstInject time.Time
	faults      []*activeFault
	phaseIdx    map[string]int
	// missed holds phase anchors whose wait ended unreached.
	missed map[scenario.Anchor]bool

	failures []string
	errs     []error
}

type activeFault struct {
	step   string
	result *FaultResult
	undo   UndoAction
	done   bool
}

// Run executes the scenario and returns its result. The returned error is
// non-nil only when the input is invalid; everything that goes wrong during
// the run is in the result's verdict and reason. Faults still in place when
// the run ends (normally, by failure, by timeout or because ctx was
// cancelled) are undone under a fresh context unless Retain is set.
func Run(ctx context.Context, in RunInput) (*Result, error) {
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("run input: %w", err)
	}
	r := &run{
		in:       in,
		tl:       in.Timeline,
		objects:  map[string][]providers.Object{},
		anchors:  map[scenario.Anchor]time.Time{},
		phaseIdx: map[string]int{},
		missed:   map[scenario.Anchor]bool{},
		poll:     in.Scenario.Spec.PollInterval.Duration,
		res: &Result{
			Scenario: in.Scenario.Metadata.Name, Provider: in.Provider.Name(), StartedAt: time.Now(),
			Parameters: in.Parameters, Targets: []TargetResult{}, Phases: []PhaseResult{},
			Assertions: []AssertionResult{}, Faults: []FaultResult{},
		},
	}
	if r.tl == nil {
		r.tl = NewTimeline(nil)
	}
	if r.poll == 0 {
		r.poll = scenario.DefaultPollInterval
	}
	r.anchors["start"] = r.res.StartedAt
	r.tl.Record("runner", "scenario/"+r.res.Scenario, "run-started", map[string]string{"provider": r.res.Provider})

	r.execute(ctx)

	r.res.FinishedAt = time.Now()
	r.tl.Record("runner", "scenario/"+r.res.Scenario, "run-finished", map[string]string{"verdict": string(r.res.Verdict), "reason": r.res.Reason})
	return r.res, nil
}

func (r *run) execute(ctx context.Context) {
	sc := r.in.Scenario
	for _, c := range sc.Spec.Requires {
		if !providers.HasCapability(r.in.Provider, c) {
			r.res.Verdict, r.res.Reason = Skipped, providers.Unsupported(r.in.Provider, c).Error()
			return
		}
	}
	timeout := sc.Spec.Timeout.Duration
	if timeout == 0 {
		timeout = scenario.DefaultTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	aborted := false
	if err := r.resolveTargets(sctx); errors.Is(err, providers.ErrUnsupported) {
		// A selector the provider cannot evaluate (a VM name on kind):
		// like a missing capability, nothing was touched.
		r.res.Verdict, r.res.Reason = Skipped, err.Error()
		return
	} else if err != nil {
		r.errs = append(r.errs, err)
		aborted = true
	} else if err := r.checkBlastRadius(); err != nil {
		r.errs = append(r.errs, err)
		aborted = true
	} else {
		sc = scenario.ExpandTargetRefs(sc, r.objects)
		r.in.Scenario = sc
	}
	for _, st := range sc.Spec.Steps {
		if aborted && st.Teardown == nil {
			continue
		}
		if aborted && ctx.Err() != nil {
			break // interrupted: undo and leave, no waiting for baselines
		}
		if st.Teardown != nil {
			// Teardown checks the state after every undo.
			r.undoPending(sctx)
		}
		if err := r.step(sctx, st); err != nil {
			r.errs = append(r.errs, fmt.Errorf("step %s: %w", st.Name, err))
			aborted = true
		}
	}
	r.undoPending(ctx)
	r.collectFaults()
	r.verdict(ctx, sctx)
}

func (r *run) verdict(ctx, sctx context.Context) {
	switch {
	case ctx.Err() != nil:
		r.res.Verdict = Error
		r.res.Reason = "interrupted: " + context.Cause(ctx).Error()
		if len(r.errs) > 0 {
			r.res.Reason += "; " + errors.Join(r.errs...).Error()
		}
	case len(r.errs) > 0:
		r.res.Verdict = Error
		reason := errors.Join(r.errs...).Error()
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			reason = "scenario timeout reached: " + reason
		}
		r.res.Reason = strings.ReplaceAll(reason, "\n", "; ")
	case len(r.failures) > 0:
		r.res.Verdict, r.res.Reason = Fail, strings.Join(r.failures, "; ")
	default:
		r.res.Verdict = Pass
	}
}

func (r *run) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// resolveTargets resolves every target once, before any fault, so every
// step acts on the same objects and the pick is recorded.
func (r *run) resolveTargets(ctx context.Context) error {
	for _, t := range r.in.Scenario.Spec.Targets {
		all, err := r.in.Provider.Resolve(ctx, t.Select)
		if err != nil {
			return &providers.InfraError{Err: fmt.Errorf("resolve target %s: %w", t.Name, err)}
		}
		if len(all) == 0 {
			return fmt.Errorf("resolve target %s: no object matches the selector: %w", t.Name, providers.ErrNotFound)
		}
		all = r.excluding(all, t.Exclude)
		if len(all) == 0 {
			return fmt.Errorf("resolve target %s: every match belongs to an excluded target (%s): %w", t.Name, strings.Join(t.Exclude, ", "), providers.ErrNotFound)
		}
		picked, seed := pick(all, t)
		r.objects[t.Name] = picked
		tr := TargetResult{Name: t.Name, Seed: seed}
		for _, o := range picked {
			tr.Objects = append(tr.Objects, o.String())
		}
		r.res.Targets = append(r.res.Targets, tr)
		details := map[string]string{"objects": strings.Join(tr.Objects, ","), "matched": fmt.Sprint(len(all))}
		if seed != nil {
			details["seed"] = fmt.Sprint(*seed)
		}
		r.tl.Record("runner", "target/"+t.Name, "target-resolved", details)
	}
	return nil
}

// excluding drops the objects of the named, already resolved targets.
func (r *run) excluding(all []providers.Object, targets []string) []providers.Object {
	taken := map[string]bool{}
	for _, t := range targets {
		for _, o := range r.objects[t] {
			taken[o.ID] = true
		}
	}
	out := all[:0:0]
	for _, o := range all {
		if !taken[o.ID] {
			out = append(out, o)
		}
	}
	return out
}

// pick chooses a target's objects from all matches (sorted by name): the
// first ones, or a seeded random sample. The seed is returned for replay.
func pick(all []providers.Object, t scenario.Target) ([]providers.Object, *int64) {
	sorted := append([]providers.Object(nil), all...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	n := len(sorted)
	switch {
	case t.Count > 0:
		n = min(t.Count, n)
	case t.Percent > 0:
		n = max(1, (len(sorted)*t.Percent+99)/100)
	}
	if t.Random == nil {
		return sorted[:n], nil
	}
	seed := drawSeed()
	if t.Random.Seed != nil {
		seed = *t.Random.Seed
	}
	rng := mrand.New(mrand.NewPCG(uint64(seed), 0))
	rng.Shuffle(len(sorted), func(i, j int) { sorted[i], sorted[j] = sorted[j], sorted[i] })
	out := sorted[:n]
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, &seed
}

func drawSeed() int64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return time.Now().UnixNano() // crypto/rand does not fail on Linux; a clock seed is still replayable
	}
	return int64(binary.LittleEndian.Uint64(b[:]) >> 1)
}

// step runs one step under its own deadline, derived from the scenario's.
func (r *run) step(ctx context.Context, st scenario.Step) error {
	if st.Timeout.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, st.Timeout.Duration)
		defer cancel()
	}
	r.tl.Record("runner", "step/"+st.Name, "step-started", map[string]string{"kind": st.StepKind()})
	var err error
	switch {
	case st.Setup != nil:
		err = r.baseline(ctx, st.Name, *st.Setup, "setup")
	case st.Teardown != nil:
		err = r.baseline(ctx, st.Name, *st.Teardown, "teardown")
	case st.Inject != nil:
		err = r.inject(ctx, st.Name, *st.Inject)
	case st.Observe != nil:
		err = r.observe(ctx, *st.Observe)
	case st.Assert != nil:
		err = r.assert(ctx, st.Name, *st.Assert)
	case st.Undo != nil:
		err = r.undoStep(ctx, st.Name, *st.Undo)
	}
	if err == nil {
		err = ctx.Err() // a wait that ended with its step's deadline is not success
	}
	details := map[string]string{}
	if err != nil {
		details["error"] = err.Error()
	}
	r.tl.Record("runner", "step/"+st.Name, "step-finished", details)
	return err
}

// baseline waits until every condition holds. Not reaching it is an error,
// not a failure: the scenario's premise (a healthy cluster) did not hold.
func (r *run) baseline(ctx context.Context, step string, b scenario.Baseline, kind string) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(scenario.DefaultTimeout)
	}
	for i, c := range b.Require {
		var last Observation
		label := fmt.Sprintf("%s %s[%d] %s", kind, step, i, c.Probe)
		lastErr, err := r.watch(ctx, watchSpec{cond: c, deadline: deadline, label: label, start: time.Now()}, func(o Observation, _ time.Time) bool {
			last = o
			return o.Met
		})
		if err != nil {
			msg := fmt.Sprintf("%s: %s on target %s did not hold (%s)", kind, c.Probe, c.Target, last.Detail)
			if lastErr != nil {
				msg += ": " + lastErr.Error()
			}
			return errors.New(msg)
		}
		r.tl.Record("runner", "target/"+c.Target, kind+"-condition-met", map[string]string{"probe": c.Probe, "detail": last.Detail})
	}
	return nil
}

// inject journals and applies a fault to every object of the target.
func (r *run) inject(ctx context.Context, step string, in scenario.Inject) error {
	def := faultCatalogue[in.Fault]
	ref := providers.ProviderRef{Name: r.in.Provider.Name()}
	if d, ok := r.in.Provider.(providers.Describer); ok {
		ref = d.Ref()
	}
	params := in.Params
	if def.backups {
		params = maps.Clone(in.Params)
		if params == nil {
			params = map[string]string{}
		}
		dir := r.in.BackupDir
		if dir == "" {
			dir = filepath.Join(filepath.Dir(r.in.Journal.Path()), "backups")
		}
		params[paramBackups] = filepath.Join(dir, step)
	}
	for _, obj := range r.objects[in.Target] {
		id := step + "/" + obj.Name
		undo := def.undo(obj, params)
		f := &activeFault{step: step, undo: undo, result: &FaultResult{ID: id, Kind: in.Fault, Target: obj.String(), Undo: undo.Action, Note: undo.Note}}
		target := obj
		if err := r.in.Journal.Append(JournalEntry{Op: OpInject, FaultID: id, Scenario: r.res.Scenario, Kind: in.Fault, Target: &target, Undo: &undo, Provider: ref}); err != nil {
			return fmt.Errorf("journal fault %s before applying it (nothing was applied): %w", id, err)
		}
		r.mu.Lock()
		r.faults = append(r.faults, f)
		r.mu.Unlock()
		r.tl.Record("journal", obj.String(), "fault-journaled", map[string]string{"fault": in.Fault, "id": id, "undo": undo.Action})
		err := def.inject(ctx, r.in.Provider, obj, params)
		now := time.Now()
		if err != nil {
			// The fault may have half-applied; its undo stays pending and
			// runs at clean-up like any other.
			r.tl.Record(r.in.Provider.Name(), obj.String(), "fault-failed", map[string]string{"fault": in.Fault, "id": id, "error": err.Error()})
			return &providers.InfraError{Err: fmt.Errorf("inject %s into %s: %w", in.Fault, obj, err)}
		}
		r.tl.markInjected(now)
		r.tl.Record(r.in.Provider.Name(), obj.String(), "fault-injected", map[string]string{"fault": in.Fault, "id": id})
		r.mu.Lock()
		f.result.InjectedAt = &now
		if r.firstInject.IsZero() {
			r.firstInject = now
		}
		r.anchors[scenario.Anchor("inject:"+step)] = now
		r.anchors["inject"] = now
		r.mu.Unlock()
	}
	return nil
}

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
	readings := 0
	lastErr, _ := r.watch(gctx, watchSpec{cond: g.Condition, deadline: deadline, label: "guard " + g.Name, start: start},
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
	default:
		res = AssertionResult{Name: g.Name, OK: true, Message: fmt.Sprintf("while %s: held for %s (%d readings)", g.Condition.Probe, time.Since(start).Round(time.Millisecond), readings)}
	}
	r.mu.Lock()
	r.res.Assertions = append(r.res.Assertions, res)
	r.mu.Unlock()
	what := "assertion-passed"
	if !res.OK {
		what = "assertion-failed"
		r.fail("guard %s: %s", g.Name, res.Message)
	}
	r.tl.Record("runner", "guard/"+g.Name, what, map[string]string{"message": res.Message})
}

func anchorOrDefault(a scenario.Anchor) scenario.Anchor {
	if a == "" {
		return "inject"
	}
	return a
}

// lookupAnchor returns when an anchor happened, if it has. "inject" before
// any injection is the start of the run.
func (r *run) lookupAnchor(a scenario.Anchor) (time.Time, bool) {
	a = anchorOrDefault(a)
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.anchors[a]
	if a == "inject" && !ok {
		return r.anchors["start"], true
	}
	return t, ok
}

// anchorTime is lookupAnchor for a phase that may be reached concurrently:
// it waits for a phase anchor until ctx ends.
func (r *run) anchorTime(ctx context.Context, a scenario.Anchor) (time.Time, bool) {
	for {
		t, ok := r.lookupAnchor(a)
		r.mu.Lock()
		missed := r.missed[a]
		r.mu.Unlock()
		if ok || missed || !strings.HasPrefix(string(a), "phase:") {
			return t, ok
		}
		select {
		case <-ctx.Done():
			return time.Time{}, false
		case <-time.After(r.poll):
		}
	}
}

func (r *run) phase(ctx context.Context, ph scenario.Phase) error {
	update := func(f func(*PhaseResult)) {
		r.mu.Lock()
		defer r.mu.Unlock()
		f(&r.res.Phases[r.phaseIdx[ph.Name]])
	}
	from, ok := r.anchorTime(ctx, ph.From)
	if !ok {
		msg := fmt.Sprintf("anchor %s was never reached", anchorOrDefault(ph.From))
		update(func(p *PhaseResult) { p.Message = msg })
		r.mu.Lock()
		r.missed[scenario.Anchor("phase:"+ph.Name)] = true
		r.mu.Unlock()
		r.fail("phase %s: %s", ph.Name, msg)
		return nil
	}
	update(func(p *PhaseResult) { at := from; p.AnchorAt = &at })
	deadline, hasDeadline := ctx.Deadline()
	var budget time.Duration
	if ph.Within.Duration > 0 {
		budget = ph.Within.Duration
		update(func(p *PhaseResult) { b := ph.Within; p.Budget = &b })
		if !hasDeadline || from.Add(budget).Before(deadline) {
			deadline = from.Add(budget)
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
		r.missed[scenario.Anchor("phase:"+ph.Name)] = true
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
	r.mu.Lock()
	r.anchors[scenario.Anchor("phase:"+ph.Name)] = at
	firstInject := r.firstInject
	r.mu.Unlock()
	sinceAnchor := scenario.D(at.Sub(from))
	details := map[string]string{"sinceAnchor": sinceAnchor.String(), "detail": seen.Detail}
	update(func(p *PhaseResult) {
		p.ObservedAt = &at
		p.SinceAnchor = &sinceAnchor
		p.OK = true
		if !firstInject.IsZero() {
			d := scenario.D(at.Sub(firstInject))
			p.SinceInject = &d
		}
	})
	r.tl.Record("runner", "phase/"+ph.Name, "phase-reached", details)
	return nil
}

func (r *run) assert(ctx context.Context, name string, a scenario.Assert) error {
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
	}
	if err != nil {
		return err
	}
	r.res.Assertions = append(r.res.Assertions, AssertionResult{Name: name, OK: ok, Message: msg})
	what := "assertion-passed"
	if !ok {
		what = "assertion-failed"
		r.fail("assertion %s: %s", name, msg)
	}
	r.tl.Record("runner", "assert/"+name, what, map[string]string{"message": msg})
	return nil
}

func (r *run) assertWithin(w scenario.WithinAssertion) (bool, string) {
	at, reached := r.lookupAnchor(scenario.Anchor("phase:" + w.Phase))
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
	readings := 0
	kind := map[bool]string{false: "never", true: "consistently"}[want]
	lastErr, err := r.watch(ctx, watchSpec{cond: w.Condition, deadline: start.Add(w.For.Duration), label: "assert " + name, start: start, budget: w.For.Duration},
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
	}
	return true, fmt.Sprintf("%s %s for %s (%d readings)", kind, w.Condition.Probe, w.For, readings), nil
}

// assertCount counts occurrences in the window, as CountAssertion says.
func (r *run) assertCount(ctx context.Context, name string, c scenario.CountAssertion) (bool, string, error) {
	start := time.Now()
	count := 0
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
	return satisfied(), msg, nil
}

// undoStep undoes one inject step's faults, or all pending ones.
func (r *run) undoStep(ctx context.Context, name string, u scenario.UndoStep) error {
	var errs []error
	for _, f := range r.pendingFaults() {
		if u.All || f.step == u.Fault {
			errs = append(errs, r.undoFault(ctx, f))
		}
	}
	r.mu.Lock()
	r.anchors[scenario.Anchor("undo:"+name)] = time.Now()
	r.mu.Unlock()
	return errors.Join(errs...)
}

func (r *run) pendingFaults() []*activeFault {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*activeFault
	for i := len(r.faults) - 1; i >= 0; i-- { // newest first
		if !r.faults[i].done {
			out = append(out, r.faults[i])
		}
	}
	return out
}

func (r *run) undoFault(ctx context.Context, f *activeFault) error {
	err := RunUndo(ctx, r.in.Provider, f.undo)
	entry := JournalEntry{Op: OpDone, FaultID: f.result.ID, Provider: providers.ProviderRef{Name: r.in.Provider.Name()}, Result: ResultUndone}
	if err != nil {
		// The inject record stays pending: recover will try again.
		r.tl.Record(r.in.Provider.Name(), f.result.Target, "undo-failed", map[string]string{"id": f.result.ID, "error": err.Error()})
		r.mu.Lock()
		f.result.Result = ResultFailed
		r.mu.Unlock()
		return &providers.InfraError{Err: fmt.Errorf("%w (still pending in journal %s; run faultline recover)", err, r.in.Journal.Path())}
	}
	if jerr := r.in.Journal.Append(entry); jerr != nil {
		err = fmt.Errorf("fault %s was undone but the journal could not record it: %w", f.result.ID, jerr)
	}
	now := time.Now()
	r.mu.Lock()
	f.done = true
	f.result.UndoneAt = &now
	f.result.Result = ResultUndone
	r.mu.Unlock()
	r.tl.Record(r.in.Provider.Name(), f.result.Target, "fault-undone", map[string]string{"id": f.result.ID, "undo": f.undo.Action})
	return err
}

// undoPending undoes every fault still in place, newest first, under a
// context that survives the caller's cancellation (Ctrl-C, timeout).
func (r *run) undoPending(ctx context.Context) {
	pending := r.pendingFaults()
	if len(pending) == 0 {
		return
	}
	if r.in.Retain {
		for _, f := range pending {
			f.done = true
			f.result.Result = ResultRetained
			r.tl.Record("runner", f.result.Target, "fault-retained", map[string]string{"id": f.result.ID})
		}
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	for _, f := range pending {
		if err := r.undoFault(cctx, f); err != nil {
			r.errs = append(r.errs, err)
		}
	}
}

// collectFaults copies the fault results, in injection order, into the
// result.
func (r *run) collectFaults() {
	for _, f := range r.faults {
		r.res.Faults = append(r.res.Faults, *f.result)
	}
}
