package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
	"github.com/faultline-dev/faultline/session/runs"
)

// defaultLab makes a run that no flag points anywhere (no --provider,
// --lab, --cluster or lab flag) go to this user's one running lab that
// serves runs, saying so; with several it says to name one.
func (o *runOptions) defaultLab(fs *pflag.FlagSet, stderr io.Writer) {
	if o.served != "" {
		o.servedNamed = true
		return
	}
	for _, f := range []string{"provider", "cluster", "profile", "nodes", "release", "assets"} {
		if fs.Changed(f) {
			return
		}
	}
	if os.Getenv(session.EnvNoServedLab) != "" {
		return
	}
	names, err := session.ServingLabs()
	switch {
	case err != nil || len(names) == 0:
	case len(names) == 1:
		o.served = names[0]
		fmt.Fprintf(stderr, "faultline: running on lab %s, which 'faultline lab up' keeps running (--provider lab starts a lab of this run's own)\n", o.served)
	default:
		fmt.Fprintf(stderr, "faultline: labs %s serve runs; this run starts a lab of its own (--lab NAME runs on one of them)\n", strings.Join(names, ", "))
	}
}

// runServed has the running lab that --lab names carry out sc, on a fresh
// cluster of its own, with its artifacts in dir (a new folder when "");
// the lab's messages show on sl as a run of this process's would.
func (o *runOptions) runServed(ctx context.Context, sc *scenario.Scenario, dir string, sl runs.Slot, sets map[string]string) (*engine.Result, string, error) {
	labDir, err := session.ServedLab(o.served)
	if err != nil {
		return nil, "", sessionErr(err)
	}
	if dir == "" {
		dir = artifacts.RunDir(sc.Metadata.Name, time.Now())
	}
	req := session.NewRunRequest(sc, sets, "")
	req.DryRun, req.Retain, req.Gate, req.Faultline, req.Replay = o.dryRun, o.retain, o.gate, versionString(), o.replay
	req.Release = o.lab.release
	if o.seedSet {
		req.Seed = &o.seed
	}
	if o.timeoutSet {
		req.Timeout = o.timeout
	}
	// The lab writes the artifacts and the history record itself.
	if req.Dir, err = filepath.Abs(dir); err == nil && o.history != "" && !o.dryRun {
		req.History, err = filepath.Abs(o.history)
	}
	if err != nil {
		return nil, "", infraErr(err)
	}
	fmt.Fprintf(sl.Out, "lab: %s runs on lab %s\n", sc.Metadata.Name, o.served)
	progress := progressOf(sl)
	res, err := session.RunServed(ctx, o.abort, labDir, req, func(m session.RunMessage) {
		switch {
		case m.Say != "":
			progress.say(m.Say)
		case m.Progress != nil:
			progress.print(*m.Progress)
		case m.Event != nil:
			progress.event(*m.Event)
		}
	})
	progress.done()
	if res == nil {
		return nil, dir, infraErr(err)
	}
	return res, dir, err
}
