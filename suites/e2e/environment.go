package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"os"

	"github.com/faultline-dev/faultline/session"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/framework/engine"
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
	// shared is the provider scenarios run on, elsewhere than the lab;
	// pool gives the lab's scenarios theirs (session.Pool).
	shared  providers.Provider
	pool    *session.Pool
	closeFn func(context.Context) error
	// untrust removes the lab CA's folder (lab.TrustLabCertificates).
	untrust []func() error
	// served is the folder of the socket of the lab that serves the
	// runs of every Ginkgo process under ginkgo -p ("" without);
	// stopServing, on the first process, stops serving them.
	served      string
	stopServing func() error
}

// Setup starts the environment the config asks for. A lab run's Machines
// are all Running when it returns. first is the scenario the suite runs
// first, nil when none or unknown: on a lab of simulated nodes, the lab's
// first cluster is the shape of first's spec.lab when the config's
// cluster does not serve it, so first runs on it.
func Setup(ctx context.Context, cfg *Config, log logr.Logger, first *scenario.Scenario) (*Environment, error) {
	e := &Environment{Config: cfg, log: log, closeFn: func(context.Context) error { return nil }}
	if cfg.Provider == session.ProviderLab {
		// vcsim's HTTP server reports CAPV's REST clients' failed TLS
		// handshakes through the standard logger.
		stdlog.SetOutput(io.Discard)
		e.pool = &session.Pool{Open: e.openLab}
		if err := e.pool.Start(ctx, e.firstShape(first)); err != nil {
			return nil, err
		}
		e.closeFn = e.pool.Close
		return e, nil
	}
	if cfg.Provider == session.ProviderKind {
		p, closeFn, err := startKind(ctx, cfg.Kind, log)
		if err != nil {
			return nil, err
		}
		e.shared, e.closeFn = p, closeFn
		return e, nil
	}
	s, err := connect(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	e.shared, e.closeFn = s.Provider, s.Close
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
	var errs []error
	if e.stopServing != nil {
		errs = append(errs, e.stopServing())
	}
	errs = append(errs, e.closeFn(ctx))
	for _, f := range e.untrust {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// checked is the provider faultline check reads: the shared one, or on
// the lab the warm lab's; nil when there is none.
func (e *Environment) checked() providers.Provider {
	if e.shared != nil {
		return e.shared
	}
	if e.pool != nil && e.pool.Warm() != nil {
		return e.pool.Warm().Provider
	}
	return nil
}

// Release is the stack the shared lab runs, nil elsewhere.
func (e *Environment) Release() *engine.Release {
	if e.pool != nil && e.pool.Warm() != nil {
		return e.pool.Warm().Release()
	}
	return nil
}

// Profile is the lab's time profile, "" elsewhere.
func (e *Environment) Profile() string {
	if e.pool != nil && e.pool.Lab() != nil {
		return e.pool.Lab().Profile().Name
	}
	return ""
}

// firstShape is the shape of the shared lab's first cluster: the
// config's, or the spec.lab of first (the scenario the suite runs first)
// on the config's nodes when the config's cluster does not serve it, so
// that first runs on it.
func (e *Environment) firstShape(first *scenario.Scenario) scenario.LabSpec {
	s := e.Config.Lab.spec(e.Config.Lab.Cluster)
	if first != nil && first.Spec.Lab != nil && !first.OwnCluster() && !s.RealNodes() {
		if f := e.Config.Lab.spec(*first.Spec.Lab); !f.RealNodes() && !lab.SpecFor(lab.ClusterName, s).Serves(f) {
			return f
		}
	}
	return s
}

// ProviderFor is the provider sc runs on, and how to release it: on the
// lab, the pool's (session.Pool), with sc on the config's nodes; the
// shared one elsewhere.
func (e *Environment) ProviderFor(ctx context.Context, sc *scenario.Scenario) (providers.Provider, func(context.Context) error, error) {
	return e.ProviderOn(ctx, sc, "")
}

// ProviderOn is ProviderFor with sc's lab on release (a stack's name or
// CAPI+CAPV versions) when it is set, over the config's lab.release.
func (e *Environment) ProviderOn(ctx context.Context, sc *scenario.Scenario, release string) (providers.Provider, func(context.Context) error, error) {
	if e.pool == nil && e.shared == nil {
		return nil, nil, fmt.Errorf("%s runs on the suite's own lab, which only Ginkgo's first process has: its spec must be Serial under ginkgo -p", sc.Metadata.Name)
	}
	if e.pool == nil {
		return e.shared, func(context.Context) error { return nil }, nil
	}
	r := e.Config.Lab.release()
	if release != "" {
		r = lab.ParseRelease(release)
	}
	if err := session.Adjust(sc, session.Adjustments{Nodes: e.Config.Lab.Nodes, Release: r}); err != nil {
		return nil, nil, err
	}
	s, done, err := e.pool.Acquire(ctx, sc)
	if err != nil {
		return nil, nil, err
	}
	return s.Provider, done, nil
}

// Prepare has the shared lab start the cluster ProviderFor will give sc,
// the scenario the suite runs next, while the one before it runs
// (session.Pool.Prepare).
func (e *Environment) Prepare(ctx context.Context, sc *scenario.Scenario) {
	if e.pool == nil || sc.Spec.Lab == nil {
		return
	}
	next := *sc
	l := e.Config.Lab.spec(*sc.Spec.Lab)
	next.Spec.Lab = &l
	e.pool.Prepare(ctx, &next)
}

// openLab opens a lab of the clusters (none: a vCenter simulator alone)
// and waits for their Machines.
func (e *Environment) openLab(ctx context.Context, spares []scenario.LabSpec, clusters ...lab.ClusterSpec) (*session.Session, error) {
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
		Lab:      session.LabConfig{Clusters: clusters, Spares: spares, Profile: p, Wait: wait, Log: labLog},
		Log:      e.log,
		// A stack's first use builds it, for minutes: its progress shows.
		Out: os.Stderr,
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
