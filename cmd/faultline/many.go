package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/session"
	"github.com/faultline-dev/faultline/session/runs"
)

// runMany runs several scenarios through the runner (runs.Runner), each in
// a folder of its own under one folder with the JUnit and index of all;
// on the lab, unscoped, through a pool: one warm lab, with a fresh
// cluster for each scenario.
func (o *runOptions) runMany(ctx context.Context, scs []*scenario.Scenario, sets map[string]string, history *artifacts.History, stdout, stderr io.Writer, log logr.Logger) error {
	var exec runs.Executor = &localExecutor{o: o, sets: sets, history: history, log: log}
	switch {
	case o.onCluster.context != "":
		e, err := o.jobsExecutor(history, stderr)
		if err != nil {
			return err
		}
		exec = e
	case o.provider == session.ProviderLab && o.scope == "" && o.served == "":
		o.pool = &session.Pool{Out: stderr, Open: func(ctx context.Context, spares []scenario.LabSpec, clusters ...lab.ClusterSpec) (*session.Session, error) {
			return o.open(ctx, clusters, spares, false, stderr, log)
		}}
		defer func() { closeSession(ctx, o.pool.Close, closeTimeout, log) }()
		exec = &pooledExecutor{localExecutor: exec.(*localExecutor)}
	}
	root := o.artifacts
	if root == "" {
		root = artifacts.RunDir("run", time.Now())
	}
	items := make([]*runs.Item, len(scs))
	folders := map[string]int{}
	for i, sc := range scs {
		items[i] = &runs.Item{Scenario: sc, Dir: filepath.Join(root, scenarioFolder(folders, sc.Metadata.Name))}
	}
	runner := &runs.Runner{Executor: exec, Provider: o.provider, Parallel: o.parallel, History: history, Out: stderr}
	if p, err := lab.ProfileNamed(o.lab.profile); err == nil {
		runner.Profile = p.Name // --profile was checked with the flags
	}
	runErr := runner.Run(ctx, items)
	var results []*engine.Result
	var dirs []string
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	for _, it := range items {
		if it.Result != nil { // nil: interrupted before it started
			results, dirs, errs = append(results, it.Result), append(dirs, it.Dir), append(errs, it.Err)
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

// localExecutor runs each item in this process, as the flags say.
type localExecutor struct {
	o       *runOptions
	sets    map[string]string
	history *artifacts.History
	log     logr.Logger
}

func (e *localExecutor) Run(ctx context.Context, it *runs.Item, sl runs.Slot) (*engine.Result, error) {
	res, dir, err := e.o.runOne(ctx, it.Scenario, it.Dir, it.Place, sl, e.sets, e.history, e.log)
	if dir != "" {
		it.Dir = dir
	}
	return res, err
}

// pooledExecutor runs each item in this process on the pool's warm lab,
// whose leased clusters it starts ahead of their items.
type pooledExecutor struct {
	*localExecutor
}

func (e *pooledExecutor) Spares(shapes []scenario.LabSpec) { e.o.pool.Spares = shapes }

func (e *pooledExecutor) PrepareLease(ctx context.Context, sc *scenario.Scenario) {
	e.o.pool.PrepareLease(ctx, sc)
}

// alone is the slot of a scenario run on its own: its lines and live line
// on stderr.
func alone(stderr io.Writer) runs.Slot {
	return runs.Slot{Out: stderr, Progress: stderr}
}

// progressOf is the progress printer of a run in sl: a live line alone,
// whole lines beside others.
func progressOf(sl runs.Slot) *progressPrinter {
	if sl.Beside {
		return newProgress(sl.Progress, false)
	}
	return newProgressPrinter(sl.Progress)
}
