package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/session"
	"github.com/faultline-dev/faultline/session/runs"
)

// acquire is the session sc runs on, within the set-up deadline, and how
// to release it: the pool's, or one of its own.
func (o *runOptions) acquire(ctx context.Context, sc *scenario.Scenario, pl session.Placement, sl runs.Slot, log logr.Logger) (*session.Session, func(context.Context) error, error) {
	setup := o.setupDeadline()
	sctx, cancel := context.WithTimeout(ctx, setup)
	defer cancel()
	var sess *session.Session
	var release func(context.Context) error
	var err error
	switch {
	case sl.Beside && pl.Where == session.Leased:
		sess, release, err = o.pool.Lease(sctx, sc)
	case o.pool != nil && !sl.Beside:
		sess, release, err = o.pool.Acquire(sctx, sc)
	default:
		// Not the pool's: no spares (those are the warm lab's).
		sess, err = o.open(sctx, session.LabClusters(sc), nil, injects(sc), sl.Out, log)
	}
	if err == nil && release == nil {
		release = sess.Close
	}
	if err != nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		return nil, nil, infraErr(fmt.Errorf("opening provider %s took longer than its set-up deadline, %s (--setup-timeout): %w", o.provider, setup, err))
	}
	if err != nil {
		return nil, nil, sessionErr(err)
	}
	return sess, release, nil
}

// closeTimeout bounds a session's release.
const closeTimeout = 30 * time.Second

// closeSession releases a session within bound, logging what fails.
func closeSession(ctx context.Context, release func(context.Context) error, bound time.Duration, log logr.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	if err := release(cctx); err != nil {
		log.Error(err, "closing provider")
	}
}

// open opens the chosen provider: with the lab, a lab of the clusters
// (none: a vCenter simulator alone), which prepares clusters of the
// spares' shapes as it starts. destructive says the scenario
// injects: a dry run's, or a scenario's that injects nothing, management
// cluster client and vCenter session refuse every write (and it needs no
// opt-in).
func (o *runOptions) open(ctx context.Context, clusters []lab.ClusterSpec, spares []scenario.LabSpec, destructive bool, stderr io.Writer, log logr.Logger) (*session.Session, error) {
	start := newStartLine(stderr)
	cfg := session.Config{Provider: o.provider, Log: log, Out: start, Status: start.status, Kind: session.KindConfig{Cluster: o.kind.cluster}, Destructive: destructive}
	cfg.Management = o.cluster.config()
	cfg.Management.Cluster = o.scope
	cfg.Management.ProbeImage = o.onCluster.image
	cfg.Management.ReadOnly = o.dryRun || !destructive
	var err error
	if o.provider == session.ProviderLab {
		cfg.Lab, err = o.lab.config(log, stderr, clusters...)
		cfg.Lab.Spares = spares
		// --setup-timeout bounds the wait for the Machines too.
		cfg.Lab.Wait = o.setupDeadline()
	} else {
		cfg.VCenter, err = o.vcenter.sessionConfig(log)
	}
	if err != nil {
		return nil, err
	}
	return session.Open(ctx, cfg)
}
