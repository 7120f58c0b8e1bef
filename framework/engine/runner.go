package engine

import (
	"context"
	"errors"
	"fmt"
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
	// OnEvent, when set, is told every timeline event as it is recorded:
	// each fault injected or undone, each phase reached or missed.
	OnEvent func(Event)
	Log     logr.Logger
	// DryRun resolves the targets and evaluates the blast-radius and
	// quorum guards, records in Result.Planned what each inject step
	// would do and where, and runs no step: nothing is touched.
	DryRun bool
	// Seed, when set, is the seed of every random target pick whose
	// scenario gives none, so that the run's choices can be fixed.
	Seed *int64
	// CleanupTimeout bounds the undo of what is left at the end; the
	// package's CleanupTimeout when zero.
	CleanupTimeout time.Duration
	// Abort, when set, cuts the clean-up short when it ends (a second
	// Ctrl-C): what was not undone stays pending in the journal, and the
	// result says how to recover it.
	Abort context.Context
	// Leases, when set, is the folder of target leases (DefaultLeases):
	// before its first inject the run leases every object it will fault,
	// and refuses to start while another run holds one.
	Leases string
	// RecoverCommand, when set, is the command that undoes what a journal
	// left pending, with what its provider's recover needs (allow-lists):
	// a failed undo's verdict names it.
	RecoverCommand func(journal string, ref providers.ProviderRef) string
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

	// objects and errs belong to the goroutine that runs the steps.
	objects map[string][]providers.Object
	// seed is the run's seed for the random picks of targets that do not
	// seed themselves, drawn once at the first resolution.
	seed *int64
	errs []error

	// mu guards everything below it, and what of res changes while
	// phases and guards run (Phases, Assertions, fault results): those run
	// in goroutines of their own and reach that state only through
	// methods that take mu, never held across a provider call. The rest
	// of res is written before the first step and after the last.
	mu      sync.Mutex
	anchors map[scenario.Anchor]time.Time
	// firstInject is the origin of every SinceInject; zero until a fault
	// is applied. The latest injection is anchors["inject"].
	firstInject time.Time
	faults      []*activeFault
	phaseIdx    map[string]int
	// timeout is the scenario's.
	timeout time.Duration
	// missed holds phase anchors whose wait ended unreached.
	missed map[scenario.Anchor]bool
	// anchored is closed, and replaced, whenever an anchor is set or a
	// phase missed: phases anchored on another wait on it.
	anchored chan struct{}
	// monitors watch the workloads, by name, from their start until the
	// first teardown or the end.
	monitors map[string]*monitor
	// powers watch the VMs the run powered off (watchPower).
	powers powerWatches

	failures []string
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
		anchored: make(chan struct{}),
		monitors: map[string]*monitor{},
		poll:     in.Scenario.Spec.PollInterval.Duration,
		res: &Result{
			Scenario: in.Scenario.Metadata.Name, Provider: in.Provider.Name(), StartedAt: time.Now(),
			Parameters: in.Parameters, Targets: []TargetResult{}, Phases: []PhaseResult{},
			Assertions: []AssertionResult{}, Faults: []FaultResult{}, Run: newRunInfo(in),
		},
	}
	if r.tl == nil {
		r.tl = NewTimeline(nil)
	}
	if r.in.OnEvent != nil {
		r.tl.observe(r.in.OnEvent)
	}
	if r.poll == 0 {
		r.poll = scenario.DefaultPollInterval
	}
	r.anchors[scenario.AnchorStart] = r.res.StartedAt
	r.tl.Record("runner", "scenario/"+r.res.Scenario, "run-started", map[string]string{"provider": r.res.Provider})

	r.execute(ctx)
	r.stopPowerWatches() // ended with the faults; none outlives the run

	r.res.FinishedAt = time.Now()
	r.tl.Record("runner", "scenario/"+r.res.Scenario, "run-finished", map[string]string{"verdict": string(r.res.Verdict), "reason": r.res.Reason})
	return r.res, nil
}

// lacksCapability ends a run whose provider lacks a capability the
// scenario requires, before anything is touched: skipped, or an error when
// the provider has it but was opened without what it needs (pointed at a
// target it cannot reach as opened).
func (r *run) lacksCapability(sc *scenario.Scenario) bool {
	for _, c := range sc.Requirements() {
		if providers.HasCapability(r.in.Provider, c) {
			continue
		}
		err := providers.Unsupported(r.in.Provider, c)
		r.res.Verdict, r.res.Reason = Skipped, err.Error()
		if c == providers.CapSimulatedNodes {
			r.res.Reason += ": " + sc.Spec.Lab.SimulatedOnly
		}
		if errors.Is(err, providers.ErrNotConfigured) {
			r.res.Verdict = Error
		}
		return true
	}
	return false
}

func (r *run) execute(ctx context.Context) {
	sc := r.in.Scenario
	if r.lacksCapability(sc) {
		return
	}
	r.timeout = sc.Spec.Timeout.Duration
	if r.timeout == 0 {
		r.timeout = scenario.DefaultTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, r.timeout)
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
	} else if err := r.checkBlastRadius(sctx); err != nil {
		r.errs = append(r.errs, err)
		aborted = true
	} else if err := r.preflight(sctx, sc); err != nil {
		r.errs = append(r.errs, err)
		aborted = true
	} else {
		sc = scenario.ExpandTargetRefs(sc, r.objects)
		r.in.Scenario = sc
	}
	if !aborted && !r.in.DryRun {
		release, err := r.lease(sctx, sc)
		if err != nil {
			r.errs = append(r.errs, err)
			aborted = true
		} else {
			// Held until the faults are undone, at the end of execute.
			defer release()
		}
	}
	if !aborted && !r.in.DryRun {
		unshare, err := r.shareJournal(sctx, r.faultTargets(sc))
		if err != nil {
			r.errs = append(r.errs, err)
			aborted = true
		} else {
			defer unshare()
		}
	}
	if r.in.DryRun {
		r.plan(sc)
		r.verdict(ctx, sctx)
		if r.res.Verdict == Pass {
			r.res.Reason = "dry run: nothing was injected"
		}
		return
	}
	if !aborted {
		if err := r.startWorkloads(sctx); err != nil {
			r.errs = append(r.errs, err)
			aborted = true
		}
	}
	r.steps(ctx, sctx, sc, aborted)
	r.stopWorkloads()
	r.undoPending(ctx)
	r.stopPowerWatches()
	r.collectFaults()
	r.verdict(ctx, sctx)
}

// steps runs the scenario's steps; once one failed (aborted), only the
// teardowns, unless ctx was interrupted.
func (r *run) steps(ctx, sctx context.Context, sc *scenario.Scenario, aborted bool) {
	for _, st := range sc.Spec.Steps {
		if aborted && st.Teardown == nil {
			continue
		}
		if aborted && ctx.Err() != nil {
			break // interrupted: undo and leave, no waiting for baselines
		}
		if st.Teardown != nil {
			// Teardown checks the state after every undo, workloads'
			// included: their watch ends first.
			r.stopWorkloads()
			r.undoPending(sctx)
		}
		if err := r.step(sctx, st); err != nil {
			r.errs = append(r.errs, fmt.Errorf("step %s: %w", st.Name, err))
			aborted = true
			continue
		}
		if err := r.resolveTargetsAfter(sctx, st.Name); err != nil {
			r.errs = append(r.errs, fmt.Errorf("after step %s: %w", st.Name, err))
			aborted = true
		}
	}
}

func (r *run) verdict(ctx, sctx context.Context) {
	// What ended the run early is said once; the waits it cut short are
	// not errors of their own.
	var errs, cut []error
	for _, err := range r.errs {
		if errors.As(err, new(errCut)) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			cut = append(cut, err)
		} else {
			errs = append(errs, err)
		}
	}
	also := func(reason string) string {
		if len(errs) > 0 {
			reason += "; " + errors.Join(errs...).Error()
		}
		if len(r.failures) > 0 {
			reason += "; before that: " + strings.Join(r.failures, "; ")
		}
		return strings.ReplaceAll(reason, "\n", "; ")
	}
	switch {
	case ctx.Err() != nil:
		r.res.Verdict = Interrupted
		r.res.Reason = also("interrupted: " + context.Cause(ctx).Error())
	case errors.Is(sctx.Err(), context.DeadlineExceeded) && (len(cut) > 0 || len(errs) > 0):
		r.res.Verdict = TimedOut
		r.res.Reason = also(fmt.Sprintf("timed out: the scenario's timeout, %s, passed", r.timeout))
	case len(cut) > 0:
		// A step's own timeout.
		r.res.Verdict = TimedOut
		r.res.Reason = also("timed out: " + cut[0].Error())
	case len(errs) > 0:
		r.res.Verdict = Error
		r.res.Reason = strings.ReplaceAll(errors.Join(errs...).Error(), "\n", "; ")
	case len(r.failures) > 0:
		r.res.Verdict, r.res.Reason = Fail, strings.Join(r.failures, "; ")
	default:
		r.res.Verdict = Pass
	}
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
