package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"os"

	"github.com/faultline-dev/faultline/providers/session"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// Environment is what a suite starts once, in SynchronizedBeforeSuite, and
// stops at the end: the shared lab (provider lab) or the connection to the
// management cluster and vCenter (provider vsphere).
type Environment struct {
	Config *Config
	log    logr.Logger
	// shared is the provider scenarios run on unless they need a cluster
	// of their own; sharedLab its lab, nil elsewhere.
	shared    providers.Provider
	sharedLab *lab.Lab
	// first is the shape of the shared lab's first cluster; used: a
	// scenario ran on it, or Renew removed it.
	first   scenario.LabSpec
	used    bool
	closeFn func(context.Context) error
	// untrust removes the lab CA's folder (lab.TrustLabCertificates).
	untrust []func() error
}

// Setup starts the environment the config asks for. A lab run's Machines
// are all Running when it returns. first is the scenario the suite runs
// first, nil when none or unknown: on a lab of simulated nodes, the lab's
// first cluster is the shape of first's spec.lab when the config's
// cluster does not serve it, so first runs on it.
func Setup(ctx context.Context, cfg *Config, log logr.Logger, first *scenario.Scenario) (*Environment, error) {
	e := &Environment{Config: cfg, log: log, closeFn: func(context.Context) error { return nil }}
	switch cfg.Provider {
	case ProviderLab:
		// vcsim's HTTP server reports CAPV's REST clients' failed TLS
		// handshakes through the standard logger.
		stdlog.SetOutput(io.Discard)
		e.first = cfg.Lab.spec(cfg.Lab.Cluster)
		if first != nil && first.Spec.Lab != nil && !first.OwnCluster() && !e.first.RealNodes() {
			if s := cfg.Lab.spec(*first.Spec.Lab); !s.RealNodes() && !lab.SpecFor(lab.ClusterName, e.first).Serves(s) {
				e.first = s
			}
		}
		s, err := e.openLab(ctx, lab.SpecFor(lab.ClusterName, e.first))
		if err != nil {
			return nil, err
		}
		e.shared, e.sharedLab, e.closeFn = s.Provider, s.Lab, s.Close
	case ProviderVSphere:
		s, err := connect(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		e.shared, e.closeFn = s.Provider, s.Close
	case ProviderKind:
		p, closeFn, err := startKind(ctx, cfg.Kind, log)
		if err != nil {
			return nil, err
		}
		e.shared, e.closeFn = p, closeFn
	}
	return e, nil
}

// startKind creates the config's kind cluster, or opens the existing one,
// and returns how to delete what it created.
func startKind(ctx context.Context, cfg KindConfig, log logr.Logger) (providers.Provider, func(context.Context) error, error) {
	state, err := kind.DefaultState()
	if err != nil {
		return nil, nil, err
	}
	// kind runs the first docker on PATH: faultline's shim where this
	// host needs one. The suite sets it, once, as main does.
	if err := os.Setenv("PATH", kind.ShimPATH(state, os.Getenv("PATH"))); err != nil {
		return nil, nil, err
	}
	if cfg.Existing {
		s, err := session.Open(ctx, session.Config{Provider: session.ProviderKind, Kind: session.KindConfig{Cluster: cfg.Name}, Log: log, OptedIn: true})
		if err != nil {
			return nil, nil, err
		}
		return s.Provider, s.Close, nil
	}
	p, _, err := kind.Up(ctx, kind.UpOptions{Name: cfg.Name, ControlPlanes: cfg.ControlPlanes, Workers: cfg.Workers, Image: cfg.Image, State: state, Log: log})
	down := func(ctx context.Context) error { return kind.Down(ctx, state, cfg.Name, nil, log) }
	if err != nil {
		if kind.IsRecorded(state, cfg.Name) {
			err = errors.Join(err, down(ctx))
		}
		return nil, nil, err
	}
	return p, down, nil
}

// Teardown stops what Setup started.
func (e *Environment) Teardown(ctx context.Context) error {
	errs := []error{e.closeFn(ctx)}
	for _, f := range e.untrust {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// Profile is the lab's time profile, "" elsewhere.
func (e *Environment) Profile() string {
	if e.sharedLab != nil {
		return e.sharedLab.Profile().Name
	}
	return ""
}

// ProviderFor is the provider sc runs on, and how to release it: the
// shared one. On a lab of simulated nodes the shared lab stays warm and
// each scenario gets a fresh cluster on it (lab.Renew), the first one
// the lab's own cluster when it serves; on a lab of real nodes, the
// shared cluster when it serves. A scenario labelled
// scenario.LabelOwnCluster, or that a real-node cluster does not serve,
// gets a lab of its own, and one with no spec.lab (a VM scenario) a
// vCenter simulator.
func (e *Environment) ProviderFor(ctx context.Context, sc *scenario.Scenario) (providers.Provider, func(context.Context) error, error) {
	keep := func(context.Context) error { return nil }
	if e.sharedLab == nil {
		return e.shared, keep, nil
	}
	var clusters []lab.ClusterSpec // none for a VM scenario: a vCenter simulator alone
	if sc.Spec.Lab != nil {
		// The scenario runs on the nodes the config chose.
		spec := e.Config.Lab.spec(*sc.Spec.Lab)
		sc.Spec.Lab = &spec
	}
	switch {
	case sc.Spec.Lab == nil:
	case sc.Spec.Lab.RealNodes() && sc.Spec.Lab.SimulatedOnly != "":
		// The run skips it, touching nothing: no lab of its own.
		return e.shared, keep, nil
	case sc.OwnCluster():
		clusters = append(clusters, lab.SpecFor(lab.ClusterName, *sc.Spec.Lab))
	case e.firstServes(*sc.Spec.Lab):
		e.used = !e.first.RealNodes()
		return e.shared, keep, nil
	case e.freshOnShared(sc, *sc.Spec.Lab):
		spec, prepared := e.sharedLab.NextSpec(lab.ClusterName, *sc.Spec.Lab)
		e.log.Info("a fresh cluster on the shared lab", "cluster", spec.Key(), "shape", spec.Shape(), "prepared", prepared)
		// Renew removes the first cluster too.
		e.used = true
		if err := e.sharedLab.Renew(ctx, spec); err != nil {
			return nil, nil, err
		}
		return e.shared, keep, sc.ScopeTo(spec.Key())
	default:
		clusters = append(clusters, lab.SpecFor(lab.ClusterName, *sc.Spec.Lab))
	}
	s, err := e.openLab(ctx, clusters...)
	if err != nil {
		return nil, nil, err
	}
	return s.Provider, s.Close, nil
}

// firstServes tells whether a scenario of shape s runs on the shared lab's
// first cluster: no scenario ran there yet and it serves s.
func (e *Environment) firstServes(s scenario.LabSpec) bool {
	return !e.used && lab.SpecFor(lab.ClusterName, e.first).Serves(s)
}

// freshOnShared tells whether scenario sc, whose spec.lab on the config's
// nodes is s, gets a fresh cluster on the shared lab (lab.Renew): one of
// simulated nodes that needs no lab of its own and that the first cluster
// does not serve. ProviderFor gives it, Prepare starts it.
func (e *Environment) freshOnShared(sc *scenario.Scenario, s scenario.LabSpec) bool {
	return !sc.OwnCluster() && !s.RealNodes() && !e.firstServes(s)
}

// Prepare has the shared lab start the cluster ProviderFor will give sc
// while the scenario before it runs (lab.Lab.PrepareNext): sc is the
// scenario the suite runs next. It does nothing where sc would not get a
// fresh cluster on the shared lab, and a cluster it could not start is
// started by ProviderFor instead.
func (e *Environment) Prepare(ctx context.Context, sc *scenario.Scenario) {
	if e.sharedLab == nil || sc.Spec.Lab == nil {
		return
	}
	s := e.Config.Lab.spec(*sc.Spec.Lab)
	if !e.freshOnShared(sc, s) {
		return
	}
	spec, err := e.sharedLab.PrepareNext(ctx, lab.ClusterName, s)
	if err != nil {
		e.log.Error(err, "could not prepare the next scenario's cluster; it is made when that scenario starts", "cluster", spec.Key())
		return
	}
	e.log.Info("preparing the next scenario's cluster", "scenario", sc.Metadata.Name, "cluster", spec.Key(), "shape", spec.Shape())
}

// openLab opens a lab of the clusters (none: a vCenter simulator alone)
// and waits for their Machines.
func (e *Environment) openLab(ctx context.Context, clusters ...lab.ClusterSpec) (*session.Session, error) {
	name := e.Config.Lab.Profile
	if name == "" {
		name = lab.DefaultProfile
	}
	p, err := lab.ProfileNamed(name)
	if err != nil {
		return nil, fmt.Errorf("e2e config lab.profile: %w", err)
	}
	// The lab's controllers log their transient errors often; LAB_DEBUG
	// shows them, as in the lab's own tests.
	// The real nodes' own lines (containers made and removed, bootstraps
	// started and ended, failures) always, the rest with LAB_DEBUG.
	labLog := logr.New(realNodesOnly{sink: e.log.GetSink()})
	library := logr.Discard()
	if os.Getenv("LAB_DEBUG") != "" {
		labLog, library = e.log.WithName("lab"), e.log.WithName("lab")
	}
	lab.RouteLibraryLogs(library)
	// CAPV then makes one TLS handshake per connection to vcsim, not two.
	untrust, err := lab.TrustLabCertificates()
	if err != nil {
		return nil, err
	}
	e.untrust = append(e.untrust, untrust)
	wait, _, err := e.Config.interval("default/wait-lab")
	if err != nil {
		return nil, err
	}
	return session.Open(ctx, session.Config{
		Provider: session.ProviderLab,
		Lab:      session.LabConfig{Clusters: clusters, Profile: p, Wait: wait, Log: labLog},
		Log:      e.log,
	})
}

// connect reaches the management cluster and vCenter of the config; the
// vCenter's credentials come from GOVC_USERNAME and GOVC_PASSWORD. The
// config naming them is the opt-in to destructive runs there.
func connect(ctx context.Context, cfg *Config, log logr.Logger) (*session.Session, error) {
	sc := session.Config{
		Provider:   session.ProviderCAPI,
		Management: session.ManagementConfig{Kubeconfig: cfg.Management.Kubeconfig, Context: cfg.Management.Context},
		Log:        log,
		OptedIn:    true,
	}
	if cfg.VCenter.URL != "" {
		vcfg, err := vsphere.ConfigFromEnv(os.Getenv)
		if err != nil {
			return nil, err
		}
		vcfg.URL, vcfg.CAFile, vcfg.Datacenter = cfg.VCenter.URL, cfg.VCenter.CAFile, cfg.VCenter.Datacenter
		sc.VCenter = session.VCenterConfig{Config: vcfg}
	}
	s, err := session.Open(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("e2e config management: %w", err)
	}
	return s, nil
}

// realNodesOnly drops everything but the lab's real-node lines (loggers
// named realnodes and vmcontainers), which go to sink at level 0.
type realNodesOnly struct{ sink logr.LogSink }

func (realNodesOnly) Init(logr.RuntimeInfo)            {}
func (realNodesOnly) Enabled(int) bool                 { return false }
func (realNodesOnly) Info(int, string, ...any)         {}
func (realNodesOnly) Error(error, string, ...any)      {}
func (r realNodesOnly) WithValues(...any) logr.LogSink { return r }

func (r realNodesOnly) WithName(name string) logr.LogSink {
	if name == "realnodes" || name == "vmcontainers" {
		return levelZero{r.sink.WithName(name)}
	}
	return r
}

// levelZero is a sink that takes level 0 only.
type levelZero struct{ logr.LogSink }

func (l levelZero) Enabled(level int) bool { return level == 0 && l.LogSink.Enabled(level) }
func (l levelZero) WithName(name string) logr.LogSink {
	return levelZero{l.LogSink.WithName(name)}
}
func (l levelZero) WithValues(kv ...any) logr.LogSink {
	return levelZero{l.LogSink.WithValues(kv...)}
}
