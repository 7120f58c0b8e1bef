package session

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab"
)

// ExecuteInput is one scenario run and where its artifacts go.
type ExecuteInput struct {
	// Dir is the run folder; it is created.
	Dir string
	// Run is the run; Execute sets its Journal and Timeline.
	Run engine.RunInput
	// Profile and Release are recorded in the result (the lab's time
	// profile and stack: Session.Profile, Session.Release()); on the lab
	// Execute reads the release from the lab the run is on.
	Profile string
	Release *engine.Release
	Log     logr.Logger
	// History, when set, receives the result of a run that is not dry;
	// the report shows each phase against it, and with Gate a passing run whose phase regressed
	// against it fails (see artifacts.ApplyGate).
	History *artifacts.History
	Gate    bool
	// Faultline is faultline's version, and Replay the command that ran
	// the scenario up to its file (faultline run and the flags that said
	// where): the result records them, with the host and the scenario
	// file copied into Dir (see engine.RunInfo).
	Faultline string
	Replay    []string
}

// Execute runs a scenario with its artifacts: the journal and the timeline
// as it goes, then result.json, junit.xml and report.html, and the dumps
// when it fails or errs. An error means the run could not be carried out
// or its evidence not kept; a failed run is a result.
func Execute(ctx context.Context, in ExecuteInput) (*engine.Result, error) {
	out, err := artifacts.Open(in.Dir)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	journal, err := engine.OpenJournal(filepath.Join(in.Dir, artifacts.JournalFile))
	if err != nil {
		return nil, err
	}
	defer journal.Close()
	timeline := engine.NewTimeline(out.Timeline())
	run := in.Run
	run.Journal, run.Timeline = journal, timeline
	if run.RecoverCommand == nil {
		run.RecoverCommand = RecoverCommand
	}
	if run.Leases == "" {
		if run.Leases, err = engine.DefaultLeases(); err != nil {
			return nil, err
		}
	}
	lp, onLab := run.Provider.(*lab.Provider)
	if onLab {
		// The lab the run is on, not the caller's idea of it (a pool's
		// warm lab while the scenario has a lab of its own).
		in.Release = labRelease(lp.Lab())
	}
	queues := readQueues(ctx, lp, onLab && !run.DryRun, in.Log)
	res, err := engine.Run(ctx, run)
	if err != nil {
		return nil, err
	}
	if queues != nil {
		writeQueues(ctx, lp, queues, filepath.Join(in.Dir, artifacts.QueuesFile), in.Log)
	}
	res.Profile, res.Release = in.Profile, in.Release
	if onLab {
		if now := labRelease(lp.Lab()); now.Stack != res.Release.Stack {
			res.Release.UpgradedTo = now
			res.Release.Via = upgradedVia(lp.Lab(), res.Release.Stack)
		}
	}
	res.ProfileSettings = profileSettings(in, run)
	var stats map[string]artifacts.PhaseStats
	if in.History != nil && !run.DryRun {
		if stats, err = in.History.Stats(artifacts.HistoryName(res), res.Provider, res.Profile); err != nil {
			return res, err
		}
		if in.Gate {
			artifacts.ApplyGate(res, stats)
		}
		if err := in.History.Add(res); err != nil {
			return res, err
		}
	}
	if err := recordRun(res, in); err != nil {
		return res, err
	}
	if err := out.WriteResult(res); err != nil {
		return res, err
	}
	dumps := keepEvidence(ctx, run, res, in.Dir, in.Log)
	if err := out.WriteReports(res, dumps, stats); err != nil {
		return res, err
	}
	// The timeline is evidence; a run that lost it did not fully work.
	if err := timeline.Err(); err != nil {
		return res, fmt.Errorf("timeline %s is incomplete: %w", filepath.Join(in.Dir, artifacts.TimelineFile), err)
	}
	return res, nil
}

// profileSettings are the settings of the run's time profile on its
// release (nil: no lab profile).
func profileSettings(in ExecuteInput, run engine.RunInput) map[string]string {
	p, err := lab.ProfileNamed(in.Profile)
	if err != nil {
		return nil
	}
	settings := p.Knobs()
	if in.Release != nil {
		if s, err := lab.ParseRelease(in.Release.Stack).Resolve(); err == nil {
			settings = p.KnobsOn(s)
		}
	}
	if l := run.Scenario.Spec.Lab; run.Scenario != nil && l != nil && l.NodeDrainTimeout.Duration > 0 {
		settings["nodeDrainTimeout"] = l.NodeDrainTimeout.String() + " (the scenario's spec.lab)"
	}
	return settings
}

// readQueues reads the lab's controllers' work queues before a run (nil
// off the lab, or when they cannot be read, which is logged).
func readQueues(ctx context.Context, lp *lab.Provider, onLab bool, log logr.Logger) lab.Queues {
	if !onLab {
		return nil
	}
	q, err := lp.Lab().Queues(ctx)
	if err != nil {
		log.Error(err, "the controllers' work queues are not kept for this run")
	}
	return q
}

// writeQueues writes to path what the work queues did since before.
func writeQueues(ctx context.Context, lp *lab.Provider, before lab.Queues, path string, log logr.Logger) {
	now, err := lp.Lab().Queues(context.WithoutCancel(ctx))
	if err == nil {
		var b []byte
		if b, err = json.MarshalIndent(now.Since(before), "", "  "); err == nil {
			err = regularfile.WriteFile(path, append(b, '\n'), 0o644)
		}
	}
	if err != nil {
		log.Error(err, "the controllers' work queues are not kept for this run")
	}
}

// keepEvidence writes what the clusters say of the run beside its result,
// when the provider reads clusters: the Events of its window (not for a
// dry run), and the dumps when it failed, erred or timed out, whose files
// it returns. The clusters are reached once for both. What cannot be read
// is logged; the run's verdict stands.
func keepEvidence(ctx context.Context, run engine.RunInput, res *engine.Result, dir string, log logr.Logger) []string {
	failed := res.Verdict == engine.Fail || res.Verdict == engine.Error || res.Verdict == engine.TimedOut
	if run.DryRun && !failed {
		return nil
	}
	// Reaching the clusters and their Events: 30 s; the dumps: a minute.
	base := context.WithoutCancel(ctx)
	rctx, cancel := context.WithTimeout(base, 30*time.Second)
	defer cancel()
	o, scope, ok := clusterScope(rctx, run, res, log)
	if !ok {
		return nil
	}
	if !run.DryRun {
		if err := artifacts.WriteEvents(rctx, o, scope, dir, res.StartedAt); err != nil {
			log.Error(err, "the run's Events are incomplete")
		}
	}
	if !failed {
		return nil
	}
	dctx, cancel := context.WithTimeout(base, time.Minute)
	defer cancel()
	files, err := artifacts.Dump(dctx, o, scope, dir, res.StartedAt)
	if err != nil {
		log.Error(err, "dumps are incomplete")
	}
	return files
}

// clusterScope is how to read the clusters of a run, when the provider
// reads clusters: through the first target's object, or a Machine of the
// cluster the run was kept in (on a lab with clusters side by side, never
// another run's), or any Machine.
func clusterScope(ctx context.Context, run engine.RunInput, res *engine.Result, log logr.Logger) (providers.Objects, providers.Object, bool) {
	o, ok := run.Provider.(providers.Objects)
	if !ok {
		return nil, providers.Object{}, false
	}
	var sel providers.Selector
	if sc := run.Scenario; sc != nil && len(sc.Spec.Targets) > 0 {
		sel.Cluster = sc.Spec.Targets[0].Select.Cluster
	}
	all, err := run.Provider.Resolve(ctx, sel)
	if err != nil || len(all) == 0 {
		log.Info("no dumps or Events: no Machine to reach the cluster through", "cluster", sel.Cluster, "error", err)
		return nil, providers.Object{}, false
	}
	scope := all[0]
	for _, obj := range all {
		if len(res.Targets) > 0 && len(res.Targets[0].Objects) > 0 && obj.String() == res.Targets[0].Objects[0] {
			scope = obj
		}
	}
	return o, scope, true
}
