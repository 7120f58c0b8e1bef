package runs

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
)

// Item is one scenario of a run of several: where its artifacts go and
// where it runs; once run, its result (or why it did not run).
type Item struct {
	Scenario *scenario.Scenario
	// Dir is its run folder; "" for a scenario skipped before it ran.
	Dir   string
	Place session.Placement
	// Result is nil until it ran, and stays nil when an interrupt kept
	// it from starting.
	Result *engine.Result
	// Err is what kept its evidence from being whole (the result
	// stands).
	Err error
}

// Slot is how one item's run shows its progress and its set-up.
type Slot struct {
	// Out receives the lines for people of its set-up: the run's own
	// stream, or whole lines that begin with its name when it starts a
	// lab of its own beside others.
	Out io.Writer
	// Progress receives its progress: the run's stream when it runs
	// alone (a live line), whole lines that begin with its name when it
	// runs beside others.
	Progress io.Writer
	// Beside: other items run at the same time.
	Beside bool
	// Next is the item to run after this one, one at a time, whose
	// cluster the executor may prepare meanwhile; nil beside others.
	Next *scenario.Scenario
}

// An Executor carries out one item in a slot: its result, nil when it
// could not run (the error says why), and what kept its evidence from
// being whole.
type Executor interface {
	Run(ctx context.Context, it *Item, sl Slot) (*engine.Result, error)
}

// A Placer is an Executor that places items itself (a Job's pods), not
// as session.Place does for this process.
type Placer interface {
	Place(sc *scenario.Scenario) session.Placement
}

// A Preparer is an Executor with a warm lab that can start leased
// clusters ahead of their items (session.Pool).
type Preparer interface {
	// Spares are the shapes the warm lab prepares as it starts.
	Spares(shapes []scenario.LabSpec)
	// PrepareLease starts the cluster sc is to lease soon.
	PrepareLease(ctx context.Context, sc *scenario.Scenario)
}

// A Batch is an Executor that submits its items at once (a Job's
// indexes) before any runs, and is closed after the last (the Job
// deleted).
type Batch interface {
	Start(ctx context.Context, items []*Item) error
	Close(ctx context.Context) error
}

// closeBound bounds a Batch's Close: a deleted pod's grace period (the
// engine's clean-up bound) and a margin.
const closeBound = engine.CleanupTimeout + time.Minute

// Runner runs items with an executor: those placed Leased, OwnLab or Pod
// side by side, at most Parallel at a time, and the others one after the
// other after them. An interrupt starts no more items.
type Runner struct {
	Executor Executor
	// Provider is where this process's executor runs them (session.Place).
	Provider string
	// Parallel is how many items run side by side; 1 runs each alone.
	Parallel int
	// History, when set, orders the items run side by side longest
	// first, as its past runs on Provider and Profile took.
	History *artifacts.History
	Profile string
	// Out receives the lines for people: where each item runs, and each
	// item's progress.
	Out io.Writer
}

// Run runs items, each with the placement it is given, and fills in their
// results; its error is the executor's failure to close (what it left).
func (r *Runner) Run(ctx context.Context, items []*Item) (err error) {
	out := r.Out
	if out == nil {
		out = io.Discard
	}
	if r.Parallel > 1 {
		out = &lockedWriter{w: out}
	}
	for _, it := range items {
		it.Place = r.place(it.Scenario)
		if it.Place.Where == session.Skipped {
			it.Result = NotRun(it.Scenario, r.Provider, engine.Skipped, it.Place.Why, time.Now())
			it.Dir = "" // skipped as its run would be, with no cluster brought up for it
		}
	}
	if b, ok := r.Executor.(Batch); ok {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeBound)
			defer cancel()
			err = b.Close(cctx)
		}()
		if err := r.start(ctx, b, items); err != nil {
			return nil
		}
	}
	together := r.together(items, out)
	r.runTogether(ctx, together, out)
	var rest []*Item
	for _, it := range items {
		if it.Result == nil && !slices.Contains(together, it) {
			rest = append(rest, it)
		}
	}
	r.runAlone(ctx, rest, out)
	return nil
}

// start submits the items to run to b; when it fails, each gets an
// error result saying why.
func (r *Runner) start(ctx context.Context, b Batch, items []*Item) error {
	var run []*Item
	for _, it := range items {
		if it.Result == nil {
			run = append(run, it)
		}
	}
	err := b.Start(ctx, run)
	if err != nil {
		now := time.Now()
		for _, it := range run {
			it.Result = NotRun(it.Scenario, r.Provider, engine.Error, err.Error(), now)
		}
	}
	return err
}

// place is where sc runs: as the executor places it, or session.Place.
func (r *Runner) place(sc *scenario.Scenario) session.Placement {
	if p, ok := r.Executor.(Placer); ok {
		return p.Place(sc)
	}
	return session.Place(sc, r.Provider)
}

// runAlone runs items one after the other, the executor preparing each
// one's cluster during the one before.
func (r *Runner) runAlone(ctx context.Context, items []*Item, out io.Writer) {
	for i, it := range items {
		if ctx.Err() != nil {
			break // interrupted: the rest do not start
		}
		sl := Slot{Out: out, Progress: out}
		if i+1 < len(items) {
			sl.Next = items[i+1].Scenario
		}
		r.runItem(ctx, it, sl)
	}
}

// runItem runs it in sl, printing its name as it starts and its verdict
// as it ends, not only in the summary; a run that gave no result gets an
// error result saying why.
func (r *Runner) runItem(ctx context.Context, it *Item, sl Slot) {
	beside := ""
	switch {
	case it.Place.Where == session.Pod:
		beside = " (in a pod of its own)"
	case !sl.Beside:
	case it.Place.Where == session.Leased:
		beside = " (beside others)"
	case it.Place.Where == session.OwnLab:
		beside = " (beside others, on a lab of its own)"
	}
	fmt.Fprintf(sl.Out, "=== %s%s\n", it.Scenario.Metadata.Name, beside)
	began := time.Now()
	it.Result, it.Err = r.Executor.Run(ctx, it, sl)
	if it.Result == nil {
		reason := "it did not run"
		if it.Err != nil {
			reason = it.Err.Error()
		}
		it.Result = NotRun(it.Scenario, r.Provider, engine.Error, reason, began)
		it.Err = nil
	}
	fmt.Fprintf(sl.Out, "---%s\n", SummaryLine(it.Result))
}

// NotRun is the result of sc on provider when it did not run to a verdict
// of its own (skipped, an error before it could start, an interruption):
// v and why, from began to now.
func NotRun(sc *scenario.Scenario, provider string, v engine.Verdict, why string, began time.Time) *engine.Result {
	return &engine.Result{Scenario: sc.Metadata.Name, Provider: provider, Verdict: v, Reason: why, StartedAt: began, FinishedAt: time.Now()}
}
