package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// The providers Open knows, by the names each provider package gives
// itself.
const (
	ProviderLab     = lab.Name
	ProviderCAPI    = capi.Name
	ProviderVSphere = vsphere.Name
	ProviderKind    = kind.Name
)

// Providers are the names Open knows, for messages and flag help.
func Providers() []string {
	return []string{ProviderLab, ProviderCAPI, ProviderVSphere, ProviderKind}
}

// Known returns an error naming the providers when name is not one.
func Known(name string) error {
	_, err := driverFor(name)
	return err
}

// driver is what the session does with one provider: open it from a
// Config and, for recover, check a journal's record of it against the
// allow-lists and reach it again.
type driver struct {
	open func(s *Session, ctx context.Context, cfg Config) error
	// check refuses an entry whose target the Reconnector may not touch;
	// it runs for every entry before anything is dialled.
	check  func(r *Reconnector, ref providers.ProviderRef) error
	reopen func(r *Reconnector, ctx context.Context, ref providers.ProviderRef) (providers.Provider, error)
	// allow, when set, is what a record asks of recover's allow-lists
	// (RecoverCommand).
	allow func(ref providers.ProviderRef) (vcenter *vsphere.Record, context string)
}

// driverFor is the one place that maps a provider's name to what
// faultline does with it.
func driverFor(name string) (driver, error) {
	switch name {
	case ProviderLab:
		return driver{open: (*Session).openLab, check: checkLab, reopen: reopenLab, allow: allowCAPI}, nil
	case ProviderCAPI:
		return driver{open: (*Session).openManagement, check: (*Reconnector).checkCAPI, reopen: (*Reconnector).reopenCAPI, allow: allowCAPI}, nil
	case ProviderVSphere:
		return driver{open: (*Session).openVSphere, check: (*Reconnector).checkVSphere, reopen: (*Reconnector).reopenVSphere, allow: allowVSphere}, nil
	case ProviderKind:
		return driver{open: (*Session).openKind, check: (*Reconnector).checkKind, reopen: (*Reconnector).reopenKind}, nil
	}
	return driver{}, configErr("provider %q: expected one of %s", name, strings.Join(Providers(), ", "))
}

// Environment variables that extend the allow-lists, comma separated.
const (
	EnvAllowedContexts = "FAULTLINE_ALLOWED_CONTEXTS"
	EnvAllowedVCenters = "FAULTLINE_ALLOWED_VCENTERS"
)

// DefaultLabWait bounds a lab's start: envtest, the controllers and the
// first Machines Running.
const DefaultLabWait = 5 * time.Minute

// LabWait is how long a lab of profile p may take to start: DefaultLabWait,
// or four times that under the real profile, whose VMs boot in a minute
// (not half a second) and whose control planes KCP joins one at a time
// (five took over 5 minutes here).
func LabWait(p lab.Profile) time.Duration {
	if p.Boot >= 30*time.Second {
		return 4 * DefaultLabWait
	}
	return DefaultLabWait
}

// Config says which provider to open and how.
type Config struct {
	// Provider is ProviderLab, ProviderCAPI, ProviderVSphere or
	// ProviderKind.
	Provider   string
	Lab        LabConfig
	Management ManagementConfig
	VCenter    VCenterConfig
	Kind       KindConfig
	Log        logr.Logger
	// Out, when set, receives lines for people: a lab's start and the
	// time it took.
	Out io.Writer
	// Status, when set, is told the lab's start status each time it
	// changes ("cluster lab: 3 of 5 Machines Running"), for a live line.
	Status func(string)
	// OptedIn says the configuration itself is the opt-in to destructive
	// runs (a suite's e2e config names its cluster and vCenter): the
	// allow-lists are not consulted.
	OptedIn bool
	// Destructive says the scenario injects faults: its cluster and
	// vCenter must be allowed even when a dry run opens them read-only,
	// so that the dry run refuses what the real run would, before
	// anything is dialled or resolved.
	Destructive bool
}

// LabConfig is the embedded lab's.
type LabConfig struct {
	// Clusters are the workload clusters to start (the session's provider
	// reaches them all); none starts only a vCenter simulator (a
	// scenario without spec.lab).
	Clusters []lab.ClusterSpec
	Profile  lab.Profile
	// Assets is the folder of kube-apiserver and etcd ("" finds them);
	// Dir the lab's folder ("" a temporary one).
	Assets, Dir string
	// Wait bounds the start until every Machine runs; DefaultLabWait
	// when zero.
	Wait time.Duration
	// Log receives the lab's controllers' logs.
	Log logr.Logger
	// Warn, when set, is told what the user should know that stops
	// nothing (lab.Input.Warn).
	Warn func(string)
	// Spares are the shapes of clusters the lab starts as soon as its
	// management plane is up, beside Clusters, for runs side by side to
	// lease (lab.Lab.Lease); the start does not wait for them.
	Spares []scenario.LabSpec
}

// ManagementConfig reaches a Cluster API management cluster.
type ManagementConfig struct {
	// Kubeconfig and Context, kubectl style ("" is $KUBECONFIG, then
	// ~/.kube/config, and the current context).
	Kubeconfig, Context string
	// Allowed are the contexts a destructive session may touch (with
	// $FAULTLINE_ALLOWED_CONTEXTS); ignored when ReadOnly.
	Allowed []string
	// ReadOnly opens a provider that refuses every write, for checks.
	ReadOnly bool
	// Workload, when set, reaches every workload cluster instead of its
	// kubeconfig Secret (a check's --workload-kubeconfig).
	Workload client.Client
	// Cluster, namespace/name, is the Cluster the session is scoped to
	// ("" every one): the vCenter given must be the one its objects name,
	// and vcenter.unreachable cuts CAPV's way to its vCenter.
	Cluster string
	// ProbeImage is faultline's image on the cluster's nodes, which
	// vcenter.unreachable's probe pod runs ("" refuses that fault).
	ProbeImage string
}

// VCenterConfig reaches a vCenter: the vSphere provider's, or the one
// behind a management cluster's VMs (when URL is set).
type VCenterConfig struct {
	vsphere.Config
	// Allowed are the vCenter hosts (or host:port) a destructive session
	// may touch (with $FAULTLINE_ALLOWED_VCENTERS); ignored when ReadOnly.
	Allowed []string
	// Options are the provider's options (a guest login).
	Options []vsphere.Option
}

// KindConfig names a kind cluster. One faultline created needs no opt-in;
// any other must be allowed by its context, kind-NAME, in
// ManagementConfig.Allowed.
type KindConfig struct {
	Cluster string
	// Kubeconfig, when set, is the kubeconfig to reach it with (the one a
	// journal recorded); otherwise faultline's record of the cluster, or
	// kind's own.
	Kubeconfig string
}

// optedIn tells whether the allow-lists need not be consulted: the
// configuration is the opt-in, or the session only reads for a scenario
// that injects nothing.
func (cfg Config) optedIn() bool {
	return cfg.OptedIn || (cfg.Management.ReadOnly && !cfg.Destructive)
}

// ConfigError is a configuration that cannot work, as opposed to a
// provider that cannot be reached: the CLI exits 2 for it, not 3.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// Release is the stack the session's lab runs, or what clusterctl's
// inventory of a management cluster records (capi sessions); nil when
// neither says.
func (s *Session) Release() *engine.Release {
	if s.Lab == nil {
		return s.release
	}
	return labRelease(s.Lab)
}

// labRelease is the release l runs now.
func labRelease(l *lab.Lab) *engine.Release {
	st := l.Stack()
	return &engine.Release{Stack: st.Name, ClusterAPI: st.ClusterAPI, CAPV: st.CAPV, InProcess: st.Compiled, Untested: st.Untested, Managers: l.ManagerVersions()}
}

// upgradedVia are the stacks l's management plane ran after from and
// before the one it runs now, each with its managers' versions.
func upgradedVia(l *lab.Lab, from string) []engine.Release {
	var via []engine.Release
	seen := false
	for _, u := range l.Upgrades() {
		if seen {
			st := u.From
			via = append(via, engine.Release{Stack: st.Name, ClusterAPI: st.ClusterAPI, CAPV: st.CAPV, InProcess: st.Compiled, Untested: st.Untested, Managers: u.Managers})
		}
		seen = seen || u.From.Name == from
	}
	return via
}

// Session is an open provider and what it takes to close it.
type Session struct {
	Provider providers.Provider
	// Lab is the lab behind Provider, when it is a lab cluster.
	Lab *lab.Lab
	// Profile is the lab's time profile name, "" elsewhere.
	Profile string
	// Client and Context are a management cluster's client and the
	// kubeconfig context it came from (capi sessions).
	Client  client.Client
	Context string
	// release is what a management cluster's inventory records.
	release *engine.Release
	closers []func(context.Context) error
}

// Close releases what Open made: a lab stops, a vCenter session logs out.
func (s *Session) Close(ctx context.Context) error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i](ctx))
	}
	return errors.Join(errs...)
}

// Open opens the provider cfg names. A destructive session against
// anything but the lab or a kind cluster faultline created needs the
// cluster or vCenter in its allow-list.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	d, err := driverFor(cfg.Provider)
	if err != nil {
		return nil, err
	}
	s := &Session{}
	if err := d.open(s, ctx, cfg); err != nil {
		return nil, errors.Join(err, s.Close(context.WithoutCancel(ctx)))
	}
	return s, nil
}

func (s *Session) openLab(ctx context.Context, cfg Config) error {
	if len(cfg.Lab.Clusters) == 0 {
		l, err := lab.StartVCenter(ctx, vsphere.WithLogger(cfg.Log))
		if err != nil {
			return err
		}
		s.Provider, s.closers = l, append(s.closers, l.Close)
		return nil
	}
	if _, err := lab.FindAssets(cfg.Lab.Assets); err != nil {
		return &ConfigError{Err: err}
	}
	p := cfg.Lab.Profile
	in := lab.Input{Assets: cfg.Lab.Assets, Dir: cfg.Lab.Dir, Profile: p, Clusters: cfg.Lab.Clusters, Log: cfg.Lab.Log, Warn: cfg.Lab.Warn}
	stack, err := in.Stack()
	if err != nil {
		return &ConfigError{Err: err}
	}
	if !stack.Compiled {
		// Built once per machine, minutes cold.
		out := cfg.Out
		if out == nil {
			out = io.Discard
		}
		if _, err := lab.BuildStack(ctx, stack, out); err != nil {
			return err
		}
	}
	started := time.Now()
	for _, c := range cfg.Lab.Clusters {
		s.say(cfg, "lab: starting cluster %s (%s, %s time profile, stack %s)\n", c.Name, c.Shape(), p.Name, stack)
	}
	l, err := lab.Start(ctx, in)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, l.Stop)
	if n := len(cfg.Lab.Spares); n > 0 {
		s.say(cfg, "lab: preparing %d more cluster(s) for the scenarios run side by side\n", n)
	}
	for _, shape := range cfg.Lab.Spares {
		if err := l.Prepare(ctx, l.FreshSpec(lab.ClusterName, shape)); err != nil {
			s.say(cfg, "lab: could not prepare a cluster (%s) ahead (%v); it is made when leased\n", lab.SpecFor(lab.ClusterName, shape).Shape(), err)
		}
	}
	wait := cfg.Lab.Wait
	if wait == 0 {
		wait = LabWait(cfg.Lab.Profile)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := l.WaitReadyReporting(wctx, cfg.Status); err != nil {
		return fmt.Errorf("lab %s: %w", cfg.Lab.Clusters[0].Name, err)
	}
	s.say(cfg, "lab: all Machines Running in %s\n", time.Since(started).Round(100*time.Millisecond))
	s.Provider, s.Lab, s.Profile = l.Provider(), l, p.Name
	return nil
}

func (s *Session) say(cfg Config, format string, args ...any) {
	if cfg.Out != nil {
		fmt.Fprintf(cfg.Out, format, args...)
	}
}
