package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/providers/session"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
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
	// many: the run has several scenarios; warm is the lab it keeps
	// between them.
	many bool
	warm *warmLab
	// next is the scenario a run of several runs after this one, whose
	// cluster the warm lab prepares meanwhile.
	next *scenario.Scenario
}

// warmLab is the lab a run of several scenarios keeps: its management
// plane, controllers and vcsim stay up, and every scenario after the
// first gets a fresh cluster on it (lab.Renew).
type warmLab struct {
	sess *session.Session
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run SCENARIO...",
		Short: "Run scenarios (files, folders, or names from 'faultline list')",
		Long: `Run scenario files, the scenario files of folders, or catalogue scenarios by
name; -l selects among them (or, with no argument, the catalogue) by their
metadata.labels, as kubectl selects objects. Several run one after the other,
each in a folder of its own, with a summary and one junit.xml at the end. With
no --provider they run on the embedded lab, which needs no vCenter and no
cluster. Against a real vCenter (--provider vsphere) the vCenter must be named
in --allow-vcenter.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.timeoutSet = cmd.Flags().Changed("timeout")
			o.seedSet = cmd.Flags().Changed("seed")
			if o.scope != "" && (o.provider == session.ProviderKind || (o.provider == session.ProviderVSphere && o.cluster.kubeconfig == "")) {
				return usageErr("--cluster names a Cluster API cluster; --provider %s has none (use --provider capi or lab)", o.provider)
			}
			for _, f := range []string{"profile", "nodes"} {
				if cmd.Flags().Changed(f) && o.provider != session.ProviderLab {
					return usageErr("--%s sets how the lab runs; it does nothing with --provider %s", f, o.provider)
				}
			}
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
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	fs.DurationVar(&o.timeout, "timeout", 0, "bound the whole run, overriding the scenario's spec.timeout (e.g. 10m)")
	fs.DurationVar(&o.setupTimeout, "setup-timeout", 0, "bound opening the provider: connecting and logging in to vCenter and the clusters, starting the lab (default: the lab's 5m with --provider lab, else 1m; never more than --timeout)")
	fs.StringVar(&o.summary, "summary", "", "also write a Markdown summary of the run(s) to this file (appended to $"+artifacts.EnvStepSummary+" too when set, as GitHub Actions shows it)")
	fs.StringVar(&o.history, "history", "", "folder of past results: this run is added, and the report shows each phase against them (default $"+artifacts.EnvHistory+")")
	fs.BoolVar(&o.gate, "gate", false, "with --history: fail a run whose phase took longer than its history's P95 + max(5s, 20%) (at least 5 past passing runs)")
	fs.BoolVar(&o.retain, "retain", false, "leave injected faults in place at the end (undo later with 'faultline recover')")
	fs.StringVar(&o.scope, "cluster", "", "keep every target inside this Cluster API cluster, namespace/name; required for a destructive run against a management cluster with several")
	fs.BoolVar(&o.dryRun, "dry-run", false, "resolve the targets and evaluate the blast-radius and quorum guards, print what would be injected where, and touch nothing (the lab is still started)")
	fs.Int64Var(&o.seed, "seed", 0, "seed of every random target pick the scenario does not seed itself, to replay or fix a run's choices")
	fs.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity on stderr (0 users, 1+ debugging)")
	o.vcenter.register(fs, true)
	o.vcenter.registerGuest(fs)
	o.lab.register(fs)
	o.cluster.register(fs)
	o.kind.register(fs)
	return cmd
}

func parseSets(sets []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErr("--set %q: expected name=value", s)
		}
		out[k] = v
	}
	return out, nil
}

func (o *runOptions) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if o.output != "text" && o.output != "json" {
		return usageErr("--output %q: expected text or json", o.output)
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
	}
	scs, err := selectScenarios(args, o.selector, sets)
	if err != nil {
		return err
	}
	many := multiple(args, o.selector)
	o.many = many
	for _, sc := range scs {
		if want := sc.Metadata.Labels["provider"]; want != "" && want != o.provider && !many {
			return usageErr("scenario %s runs on provider %s (its label provider: %s), not %s: pass --provider %s", sc.Metadata.Name, want, want, o.provider, want)
		}
		if o.timeout > 0 {
			sc.Spec.Timeout = scenario.D(o.timeout)
		}
		if o.scope != "" {
			if err := sc.ScopeTo(o.scope); err != nil {
				return usageErr("--cluster: %v", err)
			}
		}
	}
	log := newLogger(stderr, o.verbosity)

	ctx, abort, stop := notifySignals(ctx, stderr)
	defer stop()
	o.abort = abort

	if !many {
		res, dir, err := o.runOne(ctx, scs[0], o.artifacts, sets, history, stderr, log)
		if res == nil {
			return err
		}
		return o.report(stdout, []*engine.Result{res}, []string{dir}, false, err)
	}
	// Several scenarios, one after the other, each in a folder of its
	// own under one folder with the JUnit of all; on the lab, one warm
	// lab with a fresh cluster for each.
	defer o.closeWarm(ctx, log)
	root := o.artifacts
	if root == "" {
		root = artifacts.RunDir("run", time.Now())
	}
	var results []*engine.Result
	var dirs []string
	var errs []error
	folders := map[string]int{}
	for i, sc := range scs {
		if ctx.Err() != nil {
			break // interrupted: the rest do not start
		}
		o.next = nil
		if i+1 < len(scs) {
			o.next = scs[i+1]
		}
		if want := sc.Metadata.Labels["provider"]; want != "" && want != o.provider {
			results, dirs = append(results, o.notRun(sc, engine.Skipped, "it runs on provider "+want)), append(dirs, "")
			continue
		}
		fmt.Fprintf(stderr, "=== %s\n", sc.Metadata.Name)
		res, dir, err := o.runOne(ctx, sc, filepath.Join(root, scenarioFolder(folders, sc.Metadata.Name)), sets, history, stderr, log)
		if res == nil {
			res = o.notRun(sc, engine.Error, err.Error())
		} else if err != nil {
			errs = append(errs, err)
		}
		results, dirs = append(results, res), append(dirs, dir)
	}
	f, err := os.Create(filepath.Join(root, artifacts.JUnitFile))
	if err == nil {
		err = errors.Join(artifacts.WriteJUnit(f, artifacts.ResultsJUnit(results)), f.Close())
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("write the run's JUnit: %w", err))
	}
	return o.report(stdout, results, dirs, true, errors.Join(errs...))
}

// scenarioFolder is the folder, under the run's, of the next scenario
// named name: its name, and from its second run on (the same scenario
// listed twice, or two files with one name) name-2, name-3 and so on, so
// that no run's artifacts overwrite another's. seen counts the names.
func scenarioFolder(seen map[string]int, name string) string {
	seen[name]++
	if n := seen[name]; n > 1 {
		return fmt.Sprintf("%s-%d", name, n)
	}
	return name
}

// notRun is the result of a scenario that did not run: skipped, or an
// error before it could start.
func (o *runOptions) notRun(sc *scenario.Scenario, v engine.Verdict, reason string) *engine.Result {
	now := time.Now()
	return &engine.Result{Scenario: sc.Metadata.Name, Provider: o.provider, Verdict: v, Reason: reason, StartedAt: now, FinishedAt: now}
}

// report prints the results (with summary, a line each after them) and
// turns them into the exit code: the worst verdict's, an infrastructure
// error's when err is set.
func (o *runOptions) report(stdout io.Writer, results []*engine.Result, dirs []string, summary bool, err error) error {
	if serr := o.writeSummary(results); serr != nil {
		err = errors.Join(err, serr)
	}
	if o.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		var doc any = results
		if len(results) == 1 {
			doc = results[0]
		}
		if err := enc.Encode(doc); err != nil {
			return infraErr(err)
		}
	} else {
		for i, res := range results {
			printResult(stdout, res)
			if dirs[i] != "" {
				fmt.Fprintf(stdout, "artifacts: %s\n", dirs[i])
			}
		}
		if summary {
			fmt.Fprintf(stdout, "\n%d of %d scenarios passed:\n", artifacts.Passed(results), len(results))
			for _, res := range results {
				fmt.Fprintln(stdout, summaryLine(res))
			}
		}
	}
	if err != nil {
		return infraErr(err)
	}
	code := 0
	for _, res := range results {
		if c := res.Verdict.ExitCode(); c == engine.ExitInfra || (c == engine.ExitFail && code == 0) {
			code = c
		}
	}
	if code != 0 {
		return exitCode(code)
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
	}
	if o.timeoutSet {
		d = min(d, o.timeout) // --timeout bounds the whole run
	}
	return d
}

// writable checks, before anything starts, that the run's outputs can be
// written, by writing: the --artifacts folder (made if need be) takes a
// file, the --summary file opens for writing (or its folder takes a file).
// A run that injected and then could not keep its evidence would be found
// out too late. --history is made by OpenHistory before the first inject.
func writable(artifactsDir, summary string) error {
	probe := func(dir string) error {
		f, err := os.CreateTemp(dir, ".faultline-writable-*")
		if err != nil {
			return err
		}
		return errors.Join(f.Close(), os.Remove(f.Name()))
	}
	if artifactsDir != "" {
		if err := os.MkdirAll(artifactsDir, 0o750); err != nil {
			return usageErr("--artifacts %s: %v", artifactsDir, err)
		}
		if err := probe(artifactsDir); err != nil {
			return usageErr("--artifacts %s: cannot be written: %v", artifactsDir, err)
		}
	}
	if summary == "" {
		return nil
	}
	fi, err := os.Stat(summary)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return usageErr("--summary %s: not a regular file", summary)
	case err == nil:
		var f *os.File
		if f, err = os.OpenFile(summary, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			err = f.Close()
		}
	case errors.Is(err, fs.ErrNotExist):
		err = probe(filepath.Dir(summary))
	}
	if err != nil {
		return usageErr("--summary %s: cannot be written: %v", summary, err)
	}
	return nil
}

// writeSummary writes the Markdown summary to --summary and appends it to
// $GITHUB_STEP_SUMMARY, where asked.
func (o *runOptions) writeSummary(results []*engine.Result) error {
	md := artifacts.MarkdownSummary(results)
	if o.summary != "" {
		if err := os.WriteFile(o.summary, []byte(md), 0o644); err != nil {
			return fmt.Errorf("--summary: %w", err)
		}
	}
	if p := os.Getenv(artifacts.EnvStepSummary); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("$%s: %w", artifacts.EnvStepSummary, err)
		}
		_, werr := f.WriteString(md)
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("$%s: %w", artifacts.EnvStepSummary, err)
		}
	}
	return nil
}

// runOne runs sc on a session of its own, with its artifacts in dir (a
// new folder when ""), and returns its result (nil when it could not run)
// and the folder.
func (o *runOptions) runOne(ctx context.Context, sc *scenario.Scenario, dir string, sets map[string]string, history *artifacts.History, stderr io.Writer, log logr.Logger) (*engine.Result, string, error) {
	began := time.Now()
	setup := o.setupDeadline()
	sctx, cancel := context.WithTimeout(ctx, setup)
	sess, release, err := o.sessionFor(sctx, sc, stderr, log)
	if err != nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		err = infraErr(fmt.Errorf("opening provider %s took longer than its set-up deadline, %s (--setup-timeout): %w", o.provider, setup, err))
	}
	cancel()
	if err != nil {
		return nil, "", err
	}
	defer release()
	o.prepareNext(ctx, stderr)
	if sess.Client != nil {
		if err := o.requireScope(ctx, sess, sc); err != nil {
			return nil, "", err
		}
	}
	if o.dryRun && sess.Lab != nil {
		fmt.Fprintln(stderr, "dry run: the lab was started to resolve the targets; nothing will be injected")
	}
	var cleanup time.Duration
	if o.timeoutSet {
		// --timeout bounds the whole run: the scenario gets what the
		// set-up left, and the clean-up after it at most as long again.
		sc.Spec.Timeout = scenario.D(max(time.Second, o.timeout-time.Since(began)))
		cleanup = min(o.timeout, engine.CleanupTimeout)
	}
	var seed *int64
	if o.seedSet {
		seed = &o.seed
	}
	if dir == "" {
		dir = artifacts.RunDir(sc.Metadata.Name, time.Now())
	}
	progress := newProgressPrinter(stderr)
	res, err := session.Execute(ctx, session.ExecuteInput{
		Dir: dir, Profile: sess.Profile, Log: log, History: history, Gate: o.gate,
		Run: engine.RunInput{
			Scenario:   sc,
			Provider:   sess.Provider,
			Parameters: sets,
			Retain:     o.retain,
			Progress:   progress.print,
			OnEvent:    progress.event,
			Log:        log,
			DryRun:     o.dryRun,
			Seed:       seed,
			Abort:      o.abort,

			CleanupTimeout: cleanup,
		},
	})
	progress.done()
	if res == nil {
		return nil, dir, infraErr(err)
	}
	return res, dir, err
}

// sessionFor is the session sc runs on and how to release it: a warm lab's
// (see warmLab), or one of its own, closed by release.
func (o *runOptions) sessionFor(ctx context.Context, sc *scenario.Scenario, stderr io.Writer, log logr.Logger) (*session.Session, func(), error) {
	if !o.warmable(sc) {
		sess, err := o.openSession(ctx, sc, stderr, log)
		if err != nil {
			return nil, nil, err
		}
		return sess, func() { closeSession(ctx, sess, log) }, nil
	}
	keep := func() {}
	if o.warm != nil {
		spec, prepared := o.warm.sess.Lab.NextSpec(lab.ClusterName, *sc.Spec.Lab)
		if prepared {
			fmt.Fprintf(stderr, "lab: cluster %s (%s), prepared during the last scenario; the last one goes\n", spec.Key(), spec.Shape())
		} else {
			fmt.Fprintf(stderr, "lab: new cluster %s (%s) on the warm lab; the last one goes\n", spec.Key(), spec.Shape())
		}
		began := time.Now()
		err := o.warm.sess.Lab.Renew(ctx, spec)
		if err == nil {
			fmt.Fprintf(stderr, "lab: cluster %s Running in %s\n", spec.Key(), time.Since(began).Round(100*time.Millisecond))
			return o.warm.sess, keep, scopeErr(sc.ScopeTo(spec.Key()))
		}
		// A lab that cannot renew is not trusted with the next
		// scenario either: a cold one replaces it.
		fmt.Fprintf(stderr, "lab: the warm lab could not make a fresh cluster (%v); starting a new lab\n", err)
		o.closeWarm(ctx, log)
	}
	sess, err := o.openSession(ctx, sc, stderr, log)
	if err != nil {
		return nil, nil, err
	}
	o.warm = &warmLab{sess: sess}
	return sess, keep, scopeErr(sc.ScopeTo(lab.SpecFor(lab.ClusterName, *sc.Spec.Lab).Key()))
}

// prepareNext has the warm lab start the next scenario's cluster, which
// comes up while this one runs (lab.Prepare).
func (o *runOptions) prepareNext(ctx context.Context, stderr io.Writer) {
	if o.warm == nil || o.next == nil || !o.warmable(o.next) || o.dryRun {
		return
	}
	if spec, err := o.warm.sess.Lab.PrepareNext(ctx, lab.ClusterName, *o.next.Spec.Lab); err != nil {
		fmt.Fprintf(stderr, "lab: could not prepare the next scenario's cluster, %s (%v); it is made after this one\n", spec.Key(), err)
	}
}

// warmable tells whether sc runs on the warm lab of a run of several
// scenarios: a lab scenario with simulated nodes, that does not ask for a
// lab of its own, in a run not scoped by --cluster.
func (o *runOptions) warmable(sc *scenario.Scenario) bool {
	return o.many && o.provider == session.ProviderLab && sc.Spec.Lab != nil && !sc.OwnCluster() &&
		o.lab.nodes != scenario.NodesContainers && !sc.Spec.Lab.RealNodes() && o.scope == ""
}

func scopeErr(err error) error {
	if err != nil {
		return infraErr(fmt.Errorf("scope to the lab's cluster: %w", err))
	}
	return nil
}

// closeWarm stops the warm lab, if there is one.
func (o *runOptions) closeWarm(ctx context.Context, log logr.Logger) {
	if o.warm != nil {
		closeSession(ctx, o.warm.sess, log)
		o.warm = nil
	}
}

func closeSession(ctx context.Context, sess *session.Session, log logr.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := sess.Close(cctx); err != nil {
		log.Error(err, "closing provider")
	}
}

// openSession opens the chosen provider for sc.
func (o *runOptions) openSession(ctx context.Context, sc *scenario.Scenario, stderr io.Writer, log logr.Logger) (*session.Session, error) {
	cfg := session.Config{Provider: o.provider, Log: log, Out: stderr, Kind: session.KindConfig{Cluster: o.kind.cluster}}
	cfg.Management = o.cluster.config()
	cfg.Management.Cluster = o.scope
	// A dry run's management cluster client and vCenter session refuse
	// every write, and so do those of a scenario that injects nothing
	// (it needs no opt-in).
	cfg.Management.ReadOnly = o.dryRun || !injects(sc)
	cfg.Destructive = injects(sc)
	var err error
	switch o.provider {
	case session.ProviderLab:
		if sc.Spec.Lab != nil {
			if cfg.Lab, err = o.lab.config(log, lab.SpecFor(lab.ClusterName, *sc.Spec.Lab)); err != nil {
				return nil, err
			}
			// The scenario runs on the nodes --nodes chose; one that
			// cannot run on real nodes is skipped before any is started.
			sc.Spec.Lab.Nodes = cfg.Lab.Clusters[0].Nodes
			if sc.Spec.Lab.RealNodes() && sc.Spec.Lab.SimulatedOnly != "" {
				cfg.Lab.Clusters = nil
			}
		}
	case session.ProviderVSphere, session.ProviderCAPI:
		// A management cluster may have no vCenter; the vSphere provider
		// needs one.
		if cfg.VCenter, err = o.vcenter.sessionConfig(log); err != nil {
			return nil, err
		}
		if _, err := cfg.VCenter.Endpoint(); o.provider == session.ProviderVSphere && err != nil {
			return nil, usageErr("%v", err)
		}
	case session.ProviderKind:
	default:
		return nil, usageErr("--provider %q: expected lab, capi, vsphere or kind", o.provider)
	}
	s, err := session.Open(ctx, cfg)
	if err != nil {
		return nil, sessionErr(err)
	}
	return s, nil
}

func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(w, strings.TrimSpace(prefix+" "+args))
	}, funcr.Options{Verbosity: verbosity})
}

// requireScope checks the run's cluster against the management cluster's:
// --cluster must name one of them, and a destructive run (one that
// injects) against a management cluster with several must name one.
func (o *runOptions) requireScope(ctx context.Context, sess *session.Session, sc *scenario.Scenario) error {
	var list clusterv1.ClusterList
	if err := sess.Client.List(ctx, &list); err != nil {
		return infraErr(fmt.Errorf("list the management cluster's Clusters: %w", err))
	}
	names := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		names = append(names, c.Namespace+"/"+c.Name)
	}
	sort.Strings(names)
	switch {
	case o.scope != "" && !slices.Contains(names, o.scope):
		return usageErr("--cluster %s: no such Cluster in context %s; its clusters: %s", o.scope, sess.Context, strings.Join(names, ", "))
	case o.scope == "" && !o.dryRun && len(names) > 1 && injects(sc):
		return usageErr("scenario %s injects faults and context %s manages %d clusters (%s): name the one it may touch with --cluster NAMESPACE/NAME", sc.Metadata.Name, sess.Context, len(names), strings.Join(names, ", "))
	}
	return nil
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
