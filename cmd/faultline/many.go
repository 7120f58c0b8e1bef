package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/session"
)

// runMany runs several scenarios, each in a folder of its own under one
// folder with the JUnit of all; on the lab, unscoped, through a pool: one
// warm lab, with a fresh cluster for each scenario. With --parallel above
// 1, those a leased cluster serves run side by side first, with those
// that need a lab of their own beside them, and the others one after the
// other after them.
func (o *runOptions) runMany(ctx context.Context, scs []*scenario.Scenario, sets map[string]string, history *artifacts.History, stdout, stderr io.Writer, log logr.Logger) error {
	if o.parallel > 1 {
		stderr = &lockedWriter{w: stderr}
	}
	if o.provider == session.ProviderLab && o.scope == "" && o.served == "" {
		o.pool = &session.Pool{Out: stderr, Open: func(ctx context.Context, clusters ...lab.ClusterSpec) (*session.Session, error) {
			return o.open(ctx, clusters, o.spares, false, stderr, log)
		}}
		defer func() { closeSession(ctx, o.pool.Close, closeTimeout, log) }()
	}
	root := o.artifacts
	if root == "" {
		root = artifacts.RunDir("run", time.Now())
	}
	plan := make([]*planned, len(scs))
	folders := map[string]int{}
	for i, sc := range scs {
		plan[i] = &planned{sc: sc, dir: filepath.Join(root, scenarioFolder(folders, sc.Metadata.Name))}
		if want := sc.Metadata.Labels["provider"]; want != "" && want != o.provider {
			plan[i].res, plan[i].dir = o.notRun(sc, engine.Skipped, "it runs on provider "+want), ""
		} else if why := session.LabSkips(sc); why != "" && o.provider == session.ProviderLab {
			// Skipped as its run would be, without a cluster brought
			// up for it.
			plan[i].res, plan[i].dir = o.notRun(sc, engine.Skipped, why), ""
		}
	}
	together := o.together(plan, history, stderr)
	o.runTogether(ctx, plan, together, sets, history, stderr, log)
	var rest []*planned
	for i, p := range plan {
		if p.res == nil && !slices.Contains(together, i) {
			rest = append(rest, p)
		}
	}
	o.runAlone(ctx, rest, sets, history, stderr, log)
	var results []*engine.Result
	var dirs []string
	var errs []error
	for _, p := range plan {
		if p.res != nil { // nil: interrupted before it started
			results, dirs, errs = append(results, p.res), append(dirs, p.dir), append(errs, p.err)
		}
	}
	f, err := regularfile.Create(filepath.Join(root, artifacts.JUnitFile), 0o644)
	if err == nil {
		err = errors.Join(artifacts.WriteJUnit(f, artifacts.ResultsJUnit(results)), f.Close())
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("write the run's JUnit: %w", err))
	}
	if err := writeIndex(root, results, dirs); err != nil {
		errs = append(errs, fmt.Errorf("write the run's index: %w", err))
	}
	return o.report(stdout, results, dirs, true, history, errors.Join(errs...))
}

// runAlone runs the scenarios of plan one after the other, the pool
// preparing each one's cluster during the one before; an interrupt starts
// no more of them.
func (o *runOptions) runAlone(ctx context.Context, plan []*planned, sets map[string]string, history *artifacts.History, stderr io.Writer, log logr.Logger) {
	for i, p := range plan {
		if ctx.Err() != nil {
			break // interrupted: the rest do not start
		}
		o.next = nil
		if i+1 < len(plan) {
			o.next = plan[i+1].sc
		}
		o.runPlanned(ctx, p, alone(stderr), sets, history, log)
	}
}

// runPlanned runs p on sl and keeps its result (an error result when it
// could not run), printing its name as it starts and its verdict as it
// ends, not only in the summary.
func (o *runOptions) runPlanned(ctx context.Context, p *planned, sl slot, sets map[string]string, history *artifacts.History, log logr.Logger) {
	beside := ""
	switch {
	case sl.lease:
		beside = " (beside others)"
	case sl.own:
		beside = " (beside others, on a lab of its own)"
	}
	fmt.Fprintf(sl.out, "=== %s%s\n", p.sc.Metadata.Name, beside)
	p.res, p.dir, p.err = o.runOne(ctx, p.sc, p.dir, sl, sets, history, log)
	if p.res == nil {
		p.res, p.err = o.notRun(p.sc, engine.Error, p.err.Error()), nil
	}
	fmt.Fprintf(sl.out, "---%s\n", summaryLine(p.res))
}

// planned is one scenario of a run of several: where its artifacts go,
// and its result once it ran (or why it did not).
type planned struct {
	sc  *scenario.Scenario
	dir string
	res *engine.Result
	// err is what kept its evidence from being whole (the result
	// stands).
	err error
	// own says why it runs beside the others on a lab of its own, not
	// on a leased cluster ("": leased, or run alone).
	own string
}

// together are the indexes of the scenarios that run side by side
// (--parallel above 1), in the order they start: those a leased cluster
// of the warm lab serves, on the release of the first of them, and those
// that need a lab of their own (session.OwnLab), which start right after
// the first: each brings a lab up, and so takes longer. Each kind starts
// longest first, as far as history knows (longestFirst). The others run
// alone, one after the other, saying why.
func (o *runOptions) together(plan []*planned, history *artifacts.History, stderr io.Writer) []int {
	if o.parallel < 2 || (o.pool == nil && o.served == "") {
		return nil
	}
	var idx, own []int
	var first *scenario.LabSpec
	for i, p := range plan {
		if p.res != nil {
			continue
		}
		if p.own = session.OwnLab(p.sc); p.own != "" {
			if why := session.Unbuilt(p.sc); why != "" {
				p.own = ""
				fmt.Fprintf(stderr, "%s runs alone, after the others: %s\n", p.sc.Metadata.Name, why)
				continue
			}
			fmt.Fprintf(stderr, "%s runs beside the others on a lab of its own: %s\n", p.sc.Metadata.Name, p.own)
			own = append(own, i)
			continue
		}
		if why := session.Leasable(p.sc); why != "" {
			fmt.Fprintf(stderr, "%s runs alone, after the others: %s\n", p.sc.Metadata.Name, why)
			continue
		}
		if first == nil {
			first = p.sc.Spec.Lab
		} else if !first.Release.SameStack(p.sc.Spec.Lab.Release) {
			fmt.Fprintf(stderr, "%s runs alone, after the others: its release %s is not the warm lab's, %s\n", p.sc.Metadata.Name, p.sc.Spec.Lab.Release, first.Release)
			continue
		}
		idx = append(idx, i)
	}
	idx, own = o.longestFirst(plan, idx, history, stderr), o.longestFirst(plan, own, history, stderr)
	n := min(1, len(idx))
	return slices.Concat(idx[:n], own, idx[n:])
}

// longestFirst orders idx by how long their scenarios' past passing runs
// took (History.Took, on this provider and profile), longest first, so
// that the longest does not start last and end alone; those with no past
// time keep their order, after the others. It says the order it chose.
func (o *runOptions) longestFirst(plan []*planned, idx []int, history *artifacts.History, stderr io.Writer) []int {
	if history == nil || len(idx) < 2 {
		return idx
	}
	profile := "" // --profile was checked with the flags; "" finds no run
	if p, err := lab.ProfileNamed(o.lab.profile); err == nil {
		profile = p.Name
	}
	took := map[int]time.Duration{}
	for _, i := range idx {
		prof := profile
		if plan[i].sc.Spec.Lab == nil {
			prof = "" // a vCenter simulator alone: its results name no profile
		}
		d, ok, err := history.Took(plan[i].sc.Metadata.Name, o.provider, prof)
		if err != nil {
			fmt.Fprintf(stderr, "faultline: %v; the scenarios start in their order\n", err)
			return idx
		}
		if ok {
			took[i] = d
		}
	}
	if len(took) == 0 {
		return idx
	}
	out := slices.Clone(idx)
	slices.SortStableFunc(out, func(a, b int) int {
		da, ka := took[a]
		db, kb := took[b]
		switch {
		case ka && !kb:
			return -1
		case kb && !ka:
			return 1
		}
		return cmp.Compare(db, da) // longest first
	})
	var say []string
	for _, i := range out {
		if d, ok := took[i]; ok {
			say = append(say, fmt.Sprintf("%s %s", plan[i].sc.Metadata.Name, d.Round(time.Second)))
		}
	}
	fmt.Fprintf(stderr, "longest first, as the history took them: %s\n", strings.Join(say, ", "))
	return out
}

// runTogether runs the scenarios of idx at most --parallel at a time, each
// on a cluster leased from the warm lab or a lab of its own. The first
// leased one runs on the warm lab's first cluster; the clusters of the
// leased ones that start beside it, and of the leaseAhead after them,
// start with the lab, and as each leased one starts the lab prepares the
// next ones', leaseAhead beyond those started: a slot that frees finds a
// cluster coming up. Their progress goes to stderr as lines that name the
// scenario; an interrupt starts no more of them.
func (o *runOptions) runTogether(ctx context.Context, plan []*planned, idx []int, sets map[string]string, history *artifacts.History, stderr io.Writer, log logr.Logger) {
	var leased []*planned
	for _, i := range idx {
		if plan[i].own == "" {
			leased = append(leased, plan[i])
		}
	}
	ready := 1 // leased[:ready] have, or will have, a cluster
	for _, i := range idx[min(1, len(idx)):min(o.parallel, len(idx))] {
		if plan[i].own == "" {
			ready++
		}
	}
	ready = min(ready+leaseAhead, len(leased))
	for _, p := range leased[min(1, ready):ready] {
		o.spares = append(o.spares, *p.sc.Spec.Lab)
	}
	defer func() { o.spares = nil }()
	next := make(chan *planned)
	var wg sync.WaitGroup
	for range min(o.parallel, len(idx)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				o.runPlanned(ctx, p, slotOf(stderr, p.sc.Metadata.Name, p.own != ""), sets, history, log)
			}
		}()
	}
	started := 0 // leased ones handed to a slot
	for _, i := range idx {
		if ctx.Err() != nil {
			break // interrupted: the rest do not start
		}
		select {
		case next <- plan[i]:
		case <-ctx.Done():
		}
		if plan[i].own != "" || o.pool == nil {
			continue
		}
		for started++; ready < min(started+leaseAhead, len(leased)); ready++ {
			o.pool.PrepareLease(ctx, leased[ready].sc)
		}
	}
	close(next)
	wg.Wait()
}

// leaseAhead is how many leased clusters runTogether keeps coming up
// beyond those of the scenarios running. With one, the lab catalogue with
// --parallel 4 took 406 s on two cores, and 414 s with two: the clusters'
// bring-ups then share the CPU the scenarios and the lab already use up,
// and a slot that frees waits as long.
const leaseAhead = 1

// slot is how one scenario's run shows its progress and gets its
// session.
type slot struct {
	// progress is the scenario's progress printer.
	progress func() *progressPrinter
	// lease: the session is a cluster leased from the warm lab beside
	// other runs, not the pool's one at a time or a session of its own.
	lease bool
	// own: the session is a lab of its own, started beside other runs
	// (not the pool's).
	own bool
	// out receives the lines for people of the run's set-up.
	out io.Writer
}

// alone is the slot of a scenario run on its own: the live line on
// stderr.
func alone(stderr io.Writer) slot {
	return slot{progress: func() *progressPrinter { return newProgressPrinter(stderr) }, out: stderr}
}

// slotOf is the slot of scenario name run beside others, on a leased
// cluster or a lab of its own: its progress as whole lines on stderr,
// each beginning with its name, and so its own lab's start lines.
func slotOf(stderr io.Writer, name string, own bool) slot {
	w := &prefixed{w: stderr, prefix: name + ": "}
	sl := slot{progress: func() *progressPrinter { return newProgress(w, false) }, lease: !own, own: own, out: stderr}
	if own {
		sl.out = w
	}
	return sl
}

// lockedWriter writes to w one Write at a time: the lines of scenarios
// run side by side do not interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// prefixed begins each line written to w with prefix; a line is written
// once whole.
type prefixed struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	pending []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, b...)
	for {
		i := bytes.IndexByte(p.pending, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := io.WriteString(p.w, p.prefix+string(p.pending[:i+1])); err != nil {
			return len(b), err
		}
		p.pending = p.pending[i+1:]
	}
}
