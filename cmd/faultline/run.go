package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/session"
	"github.com/faultline-dev/faultline/session/runs"
	"github.com/faultline-dev/faultline/session/runs/jobs"
)

type runOptions struct {
	// abort ends when the clean-up is to be cut short (a second signal).
	abort     context.Context
	provider  string
	lab       labFlags
	cluster   clusterFlags
	sets      []string
	artifacts string
	output    string
	timeout   time.Duration
	// timeoutSet: --timeout was given (0s is then an error, not "unset").
	timeoutSet bool
	retain     bool
	verbosity  int
	vcenter    vcenterFlags
	kind       kindFlags
	history    string
	gate       bool
	selector   string
	summary    string
	// setupTimeout bounds opening the provider (--setup-timeout).
	setupTimeout time.Duration
	// scope is --cluster, namespace/name.
	scope  string
	dryRun bool
	seed   int64
	// seedSet: --seed was given.
	seedSet bool
	// replay is faultline run with the flags that said where it ran.
	replay []string
	// served is the running lab that carries out the runs (--lab, or
	// the one that serves runs when no flag says where); servedNamed:
	// --lab named it, and a scenario it cannot run is refused rather
	// than run on a lab of its own.
	served      string
	servedNamed bool
	// parallel is how many scenarios run side by side (--parallel).
	parallel int
	// skippedExit is the exit code of a run whose scenarios passed but
	// for one or more skipped (--skipped-exit-code).
	skippedExit int
	// onCluster runs the scenarios as a Job's pods (--on-cluster);
	// podArgs are the flags each pod's run gets.
	onCluster onClusterFlags
	podArgs   []string
	// pool gives the scenarios of a run of several on the lab their
	// sessions (a warm lab); nil elsewhere.
	pool *session.Pool
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use: "run SCENARIO...",
		Example: `  # a catalogue scenario on the embedded lab (no vCenter, no cluster)
  faultline run power-off-worker
  # on real kubeadm nodes in containers, the budgets of a real cluster
  faultline run power-off-worker --nodes containers --set budget.unhealthy=7m
  # your own CAPV management cluster, one Cluster, replaying a night's pick
  faultline run power-off-worker --provider capi --context mgmt --allow-context mgmt --cluster default/prod-1 --seed 42
  # the core scenarios, four at a time, each on a fresh cluster of one warm lab
  faultline run -l tier=core --parallel 4
  # every core scenario, with history and the regression gate, for CI
  faultline run -l tier=core --history nightly-history --gate --summary summary.md`,
		ValidArgsFunction: completeScenarios,
		Short:             "Run scenarios (files, folders, or names from 'faultline list')",
		Long: `Run scenario files, the scenario files of folders, or catalogue scenarios by
name; -l selects among them (or, with no argument, the catalogue) by their
metadata.labels, as kubectl selects objects. Several run one after the other,
each in a folder of its own, with a summary and one junit.xml at the end. With
no --provider they run on the embedded lab, which needs no vCenter and no
cluster. Against a real vCenter (--provider vsphere) the vCenter must be named
in --allow-vcenter.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := session.Known(o.provider); err != nil {
				return usageErr("--%v", err)
			}
			o.replay = replayBase(cmd.Flags(), os.Getenv)
			o.timeoutSet = cmd.Flags().Changed("timeout")
			o.seedSet = cmd.Flags().Changed("seed")
			if o.scope != "" && (o.provider == session.ProviderKind || (o.provider == session.ProviderVSphere && o.cluster.kubeconfig == "")) {
				return usageErr("--cluster names a Cluster API cluster; --provider %s has none (use --provider capi or lab)", o.provider)
			}
			if err := o.checkPlace(cmd.Flags()); err != nil {
				return err
			}
			o.defaultLab(cmd.Flags(), cmd.ErrOrStderr())
			if err := o.checkOnCluster(cmd.Flags()); err != nil {
				return err
			}
			o.podArgs = podArgs(cmd.Flags())
			if cmd.Flags().Changed("kind-cluster") && o.provider != session.ProviderKind {
				return usageErr("--kind-cluster names the cluster of --provider kind; it does nothing with --provider %s", o.provider)
			}
			if err := writable(o.artifacts, o.summary); err != nil {
				return err
			}
			if len(args) == 0 && o.selector == "" {
				return usageErr("run needs a scenario: a file, a folder, a name from 'faultline list', or -l SELECTOR over the catalogue")
			}
			return o.run(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.provider, "provider", session.ProviderLab, "where to run: lab (embedded Cluster API lab, or vcsim alone for scenarios without spec.lab), capi (a Cluster API management cluster), vsphere or kind (--kind-cluster)")
	fs.StringArrayVar(&o.sets, "set", nil, "override a scenario parameter, name=value; repeatable (with several scenarios, each that declares it)")
	fs.StringVarP(&o.selector, "selector", "l", "", "run only the scenarios whose metadata.labels match this label selector (e.g. 'tier=core,!incident'); with no argument, over the catalogue")
	fs.StringVar(&o.artifacts, "artifacts", "", "folder for result.json, timeline.jsonl and journal.jsonl (default $ARTIFACTS or _artifacts, then <scenario>-<timestamp>)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	fs.DurationVar(&o.timeout, "timeout", 0, "bound the whole run, overriding the scenario's spec.timeout (e.g. 10m)")
	fs.DurationVar(&o.setupTimeout, "setup-timeout", 0, "bound opening the provider: connecting and logging in to vCenter and the clusters, starting the lab (default: the lab's 5m with --provider lab, 20m with --profile real, else 1m; never more than --timeout)")
	fs.BoolVar(&o.retain, "retain", false, "leave injected faults in place at the end (undo later with 'faultline recover')")
	fs.StringVar(&o.scope, "cluster", "", "keep every target inside this Cluster API cluster, namespace/name; required for a destructive run against a management cluster with several")
	fs.BoolVar(&o.dryRun, "dry-run", false, "resolve the targets and evaluate the blast-radius and quorum guards, print what would be injected where, and touch nothing (the lab is still started)")
	fs.StringVar(&o.served, "lab", "", "run on a fresh cluster of the running lab of this name ('faultline lab up' prints it), which keeps one ready: no lab start, nothing to configure")
	fs.IntVar(&o.parallel, "parallel", 1, "with several scenarios on the lab: run up to this many side by side, each on a fresh cluster of one warm lab, or a lab of its own when it needs one (one labelled alone: \"true\", with real nodes, or on another release than the warm lab's runs alone after them); with --history, the longest start first, as past runs took; with --on-cluster, how many pods run at a time")
	fs.Int64Var(&o.seed, "seed", 0, "seed of every random target pick the scenario does not seed itself, to replay or fix a run's choices")
	fs.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity on stderr (0 users, 1+ debugging)")
	o.vcenter.register(fs, true)
	o.vcenter.registerGuest(fs)
	o.lab.register(fs)
	o.cluster.register(fs)
	o.kind.register(fs)
	o.onCluster.register(fs)
	o.registerCI(fs)
	return cmd
}

// registerCI registers what a CI job reads of a run: the summary, the
// history and its gate, a skip's exit code.
func (o *runOptions) registerCI(fs *pflag.FlagSet) {
	fs.StringVar(&o.summary, "summary", "", "also write a Markdown summary of the run(s) to this file (appended to $"+artifacts.EnvStepSummary+" too when set, as GitHub Actions shows it)")
	fs.StringVar(&o.history, "history", "", "folder of past results: this run is added, and the report shows each phase against them (default $"+artifacts.EnvHistory+")")
	fs.BoolVar(&o.gate, "gate", false, "with --history: fail a run whose phase took longer than its history's P95 + max(5s, 20%) (at least 5 past passing runs)")
	fs.IntVar(&o.skippedExit, "skipped-exit-code", exitPass, "exit code of a run in which no scenario failed and one or more were skipped (the provider lacks what they need): 0 by default, so a skip does not fail CI; e.g. 4 to tell it apart")
}

// checkPlace refuses flags that say where and how to run and do nothing
// with the others given: --profile, --nodes and --release off the lab;
// --parallel off one lab's clusters; anything of the kind with --lab.
func (o *runOptions) checkPlace(fs *pflag.FlagSet) error {
	for _, f := range []string{"profile", "nodes", "release"} {
		if fs.Changed(f) && o.provider != session.ProviderLab {
			return usageErr("--%s sets how the lab runs; it does nothing with --provider %s", f, o.provider)
		}
	}
	if o.skippedExit < 0 || o.skippedExit > 125 {
		return usageErr("--skipped-exit-code %d: expected 0 to 125", o.skippedExit)
	}
	if o.parallel < 1 {
		return usageErr("--parallel %d: expected 1 or more", o.parallel)
	}
	if o.served != "" {
		// --release is the lab's, or runs on a lab of its own of that
		// release, saying why (runOne).
		for _, f := range []string{"provider", "cluster", "profile", "nodes", "assets"} {
			if fs.Changed(f) {
				return usageErr("--%s does nothing with --lab: the running lab says where and how scenarios run", f)
			}
		}
	}
	if o.parallel > 1 && (o.provider != session.ProviderLab || o.scope != "") {
		return usageErr("--parallel runs scenarios side by side on clusters of one lab; with --provider %s or --cluster they would share one cluster", o.provider)
	}
	return nil
}

func (o *runOptions) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := checkOutput(o.output, "text", outputJSON, outputYAML); err != nil {
		return err
	}
	if o.timeoutSet && (o.timeout <= 0 || o.timeout > scenario.MaxDuration) {
		return usageErr("--timeout %s: expected a positive duration up to %s", o.timeout, scenario.MaxDuration)
	}
	if o.setupTimeout < 0 || o.setupTimeout > scenario.MaxDuration {
		return usageErr("--setup-timeout %s: expected a positive duration up to %s", o.setupTimeout, scenario.MaxDuration)
	}
	sets, err := parseSets(o.sets)
	if err != nil {
		return err
	}
	if o.history == "" {
		o.history = os.Getenv(artifacts.EnvHistory)
	}
	if o.gate && o.history == "" {
		return usageErr("--gate needs --history (or $%s): the folder of past results to compare with", artifacts.EnvHistory)
	}
	var history *artifacts.History
	switch {
	case o.history != "" && o.dryRun:
		// A dry run measures nothing: it neither creates the folder
		// nor adds a record the gate would count as a pass.
		fmt.Fprintf(stderr, "dry run: history %s is left untouched\n", o.history)
	case o.history != "":
		if history, err = artifacts.OpenHistory(o.history); err != nil {
			return usageErr("--history: %v", err)
		}
		history.Warn = warnTo(stderr)
	}
	scs, err := selectScenarios(args, o.selector, sets)
	if err != nil {
		return err
	}
	// A Job runs one scenario or several alike.
	many := multiple(args, o.selector) || o.onCluster.context != ""
	if err := o.adjust(scs, many); err != nil {
		return err
	}
	log := newLogger(stderr, o.verbosity)

	if o.servedNamed {
		// The lab named must be running, whatever its scenarios need.
		if _, err := session.ServedLab(o.served); err != nil {
			return sessionErr(err)
		}
	}
	ctx, abort, stop := notifySignals(ctx, stderr)
	defer stop()
	o.abort = abort

	if !many {
		if pl := session.Place(scs[0], o.provider); pl.Where == session.Skipped {
			// Known before anything starts: no lab is brought up for
			// a scenario it would skip.
			return o.report(stdout, []*engine.Result{runs.NotRun(scs[0], o.provider, engine.Skipped, pl.Why, time.Now())}, []string{""}, false, history, nil)
		}
		res, dir, err := o.runOne(ctx, scs[0], o.artifacts, session.Placement{Where: session.Alone}, alone(stderr), sets, history, log)
		if res == nil {
			return err
		}
		if o.onCluster.emit {
			// A Job's pod: its result is printed where it comes
			// back, from the folder it sends.
			err = errors.Join(err, jobs.Emit(stdout, dir))
			stdout = io.Discard
		}
		return o.report(stdout, []*engine.Result{res}, []string{dir}, false, history, err)
	}
	return o.runMany(ctx, scs, sets, history, stdout, stderr, log)
}

// adjust checks each scenario against the provider and applies --timeout,
// --cluster and --nodes to it (session.Adjust).
func (o *runOptions) adjust(scs []*scenario.Scenario, many bool) error {
	if err := o.lab.validate(); err != nil {
		return err
	}
	for _, sc := range scs {
		if want := sc.Metadata.Labels["provider"]; want != "" && want != o.provider && !many {
			return usageErr("scenario %s runs on provider %s (its label provider: %s), not %s: pass --provider %s", sc.Metadata.Name, want, want, o.provider, want)
		}
		if err := session.Adjust(sc, session.Adjustments{Timeout: o.timeout, Scope: o.scope, Nodes: o.lab.nodes, Release: o.lab.releaseFlag()}); err != nil {
			return usageErr("--cluster: %v", err)
		}
	}
	return nil
}

// setupDeadline is --setup-timeout, or by default the lab's own wait with
// --provider lab and 1m elsewhere; never more than --timeout when it is
// given, which bounds the whole run: a vCenter that accepts connections
// and never answers must not hold a run past its timeout.
func (o *runOptions) setupDeadline() time.Duration {
	d := time.Minute
	switch {
	case o.setupTimeout > 0:
		d = o.setupTimeout
	case o.provider == session.ProviderLab:
		d = labStartTimeout
		if p, err := lab.ProfileNamed(o.lab.profile); err == nil {
			d = session.LabWait(p)
		}
	}
	if o.timeoutSet {
		d = min(d, o.timeout) // --timeout bounds the whole run
	}
	return d
}

// runOne runs sc, placed at pl, on a session (the pool's, or one of its
// own), with its artifacts in dir (a new folder when ""), and returns its
// result (nil when it could not run) and the folder.
func (o *runOptions) runOne(ctx context.Context, sc *scenario.Scenario, dir string, pl session.Placement, sl runs.Slot, sets map[string]string, history *artifacts.History, log logr.Logger) (*engine.Result, string, error) {
	if o.served != "" {
		// What the served lab does not run (another release, a lab of
		// its own) runs on a lab of its own, saying why.
		why := session.Place(sc, session.ProviderLab).Why
		if why == "" {
			res, dir, err := o.runServed(ctx, sc, dir, sl, sets)
			var ns *session.NotServedError
			if !errors.As(err, &ns) {
				return res, dir, err
			}
			why = ns.Why
		}
		fmt.Fprintf(sl.Out, "faultline: %s runs on a lab of its own, not on lab %s: %s\n", sc.Metadata.Name, o.served, why)
	}
	began := time.Now()
	stderr := sl.Out
	lease := sl.Beside && pl.Where == session.Leased
	sess, release, err := o.acquire(ctx, sc, pl, sl, log)
	if err != nil {
		return nil, "", err
	}
	closeBound := closeTimeout
	if lease {
		// Removing a leased cluster waits for Cluster API to delete it;
		// with several at once on two cores, that took over 30 s.
		closeBound = lab.RemoveTimeout
	}
	defer closeSession(ctx, release, closeBound, log)
	if o.pool != nil && !o.dryRun && !sl.Beside {
		o.pool.Prepare(ctx, sl.Next)
	}
	if err := sess.RequireScope(ctx, o.scope, sc.Metadata.Name, injects(sc) && !o.dryRun); err != nil {
		return nil, "", sessionErr(err)
	}
	if o.dryRun && sess.Lab != nil {
		fmt.Fprintln(stderr, "dry run: the lab was started to resolve the targets; nothing will be injected")
	}
	var cleanup time.Duration
	if o.timeoutSet {
		// --timeout bounds the whole run: the scenario gets what the
		// set-up left, and the clean-up after it at most as long again.
		if err := session.Adjust(sc, session.Adjustments{Timeout: max(time.Second, o.timeout-time.Since(began))}); err != nil {
			return nil, "", usageErr("--timeout: %v", err)
		}
		cleanup = min(o.timeout, engine.CleanupTimeout)
	}
	var seed *int64
	if o.seedSet {
		seed = &o.seed
	}
	if dir == "" {
		dir = artifacts.RunDir(sc.Metadata.Name, time.Now())
	}
	progress := progressOf(sl)
	res, err := session.Execute(ctx, session.ExecuteInput{
		Dir: dir, Profile: sess.Profile, Release: sess.Release(), Log: log, History: history, Gate: o.gate,
		Faultline: versionString(), Replay: o.replay,
		Run: engine.RunInput{
			Scenario: sc, Provider: sess.Provider, Parameters: sets, Retain: o.retain,
			Progress: progress.print, OnEvent: progress.event, Log: log,
			DryRun: o.dryRun, Seed: seed, Abort: o.abort, CleanupTimeout: cleanup,
		},
	})
	progress.done()
	if res == nil {
		return nil, dir, infraErr(err)
	}
	return res, dir, err
}

// injects tells whether sc has an inject step.
func injects(sc *scenario.Scenario) bool {
	for _, st := range sc.Spec.Steps {
		if st.Inject != nil {
			return true
		}
	}
	return false
}
