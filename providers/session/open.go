package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// The providers Open knows.
const (
	ProviderLab     = "lab"
	ProviderCAPI    = "capi"
	ProviderVSphere = "vsphere"
	ProviderKind    = "kind"
)

// Environment variables that extend the allow-lists, comma separated.
const (
	EnvAllowedContexts = "FAULTLINE_ALLOWED_CONTEXTS"
	EnvAllowedVCenters = "FAULTLINE_ALLOWED_VCENTERS"
)

// DefaultLabWait bounds a lab's start: envtest, the controllers and the
// first Machines Running.
const DefaultLabWait = 5 * time.Minute

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
	// ("" every one): the vCenter given must be the one its objects name.
	Cluster string
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
	s := &Session{}
	var err error
	switch cfg.Provider {
	case ProviderLab:
		err = s.openLab(ctx, cfg)
	case ProviderCAPI:
		s.Provider, err = s.openManagement(ctx, cfg)
	case ProviderVSphere:
		s.Provider, err = s.openVCenter(ctx, cfg.VCenter, cfg.Log, cfg.optedIn(), cfg.Management.ReadOnly)
	case ProviderKind:
		s.Provider, err = openKind(ctx, cfg)
	default:
		err = configErr("provider %q: expected %s, %s, %s or %s", cfg.Provider, ProviderLab, ProviderCAPI, ProviderVSphere, ProviderKind)
	}
	if err != nil {
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
	started := time.Now()
	for _, c := range cfg.Lab.Clusters {
		s.say(cfg, "lab: starting cluster %s (%s, %s time profile)\n", c.Name, c.Shape(), p.Name)
	}
	l, err := lab.Start(ctx, lab.Input{Assets: cfg.Lab.Assets, Dir: cfg.Lab.Dir, Profile: p, Clusters: cfg.Lab.Clusters, Log: cfg.Lab.Log})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, l.Stop)
	wait := cfg.Lab.Wait
	if wait == 0 {
		wait = DefaultLabWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := l.WaitReady(wctx); err != nil {
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

// openManagement reaches the management cluster and, when a vCenter is
// configured, the vCenter behind it for VM faults.
func (s *Session) openManagement(ctx context.Context, cfg Config) (providers.Provider, error) {
	c, source, name, err := ManagementClient(cfg.Management, "--kubeconfig")
	if err != nil {
		return nil, err
	}
	s.Client, s.Context = c, name
	target := "context " + name
	if server, _, err := capi.Identity(cfg.Management.Kubeconfig, name); err == nil && name != capi.InClusterContext {
		target += " (" + server + ", " + source + ")"
	}
	if cfg.VCenter.URL != "" {
		if u, err := cfg.VCenter.Endpoint(); err == nil {
			target += ", vCenter " + u.Host
		}
	}
	s.say(cfg, "%s: %s\n", cfg.Provider, target)
	if !cfg.optedIn() && !Allowed(cfg.Management.Allowed, EnvAllowedContexts, name) {
		return nil, configErr("refusing a destructive run against context %q: it is not in --allow-context or $%s", name, EnvAllowedContexts)
	}
	opts := []capi.Option{capi.WithLogger(cfg.Log), capi.WithKubeconfig(source, name)}
	if cfg.Management.ReadOnly {
		opts = append(opts, capi.WithReadOnly())
	}
	if cfg.Management.Workload != nil {
		opts = append(opts, capi.WithWorkloadClient(cfg.Management.Workload))
	}
	if cfg.VCenter.URL != "" {
		u, err := cfg.VCenter.Endpoint()
		if err != nil {
			return nil, &ConfigError{Err: err}
		}
		// Checked before logging in: a vCenter other than the cluster's
		// has none of its VMs (a check would call each missing, a fault
		// would find none or another cluster's).
		err = capi.CheckServer(ctx, c, cfg.Management.Cluster, u)
		if errors.As(err, new(*capi.ServerMismatchError)) {
			return nil, &ConfigError{Err: err}
		}
		if err != nil {
			return nil, err
		}
		vc, err := s.openVCenter(ctx, cfg.VCenter, cfg.Log, cfg.optedIn(), cfg.Management.ReadOnly)
		if err != nil {
			return nil, err
		}
		opts = append(opts, capi.WithVCenter(vc))
	}
	return capi.New(c, opts...), nil
}

// ManagementClient is a client of the cluster m names, with the
// kubeconfig source and context it came from; flag names the kubeconfig
// in errors. It checks no allow-list: Open does, for destructive sessions.
func ManagementClient(m ManagementConfig, flag string) (client.Client, string, string, error) {
	if m.Kubeconfig == "" && m.Context == "" && InPod() {
		// In a pod with no kubeconfig (faultline's CronJob): the cluster
		// it runs in, through its service account.
		c, err := capi.NewInClusterClient()
		if err != nil {
			return nil, "", "", &ConfigError{Err: err}
		}
		return c, "in-cluster configuration", capi.InClusterContext, nil
	}
	c, source, name, err := capi.NewClient(m.Kubeconfig, m.Context)
	switch {
	case capi.IsKubeconfigError(err) && m.Kubeconfig != "" && errors.Is(err, fs.ErrNotExist):
		return nil, "", "", configErr("%s %s: %v", flag, m.Kubeconfig, err)
	case capi.IsKubeconfigError(err) && flag != "--kubeconfig":
		return nil, "", "", configErr("%s: %v", flag, err)
	case capi.IsKubeconfigError(err):
		return nil, "", "", &ConfigError{Err: err}
	case err != nil:
		return nil, "", "", err
	}
	return c, source, name, nil
}

// InPod tells whether faultline runs in a pod with a service account and
// no kubeconfig ($KUBECONFIG, ~/.kube/config): then a management cluster
// named by no flag is the cluster it runs in.
func InPod() bool {
	if os.Getenv("KUBECONFIG") != "" {
		return false
	}
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
		return false
	}
	return capi.InCluster()
}

// openVCenter logs in to the vCenter v names; unless allowed already (a
// read-only or opted-in session), it must be in the allow-list. The
// vSphere provider's Close goes with the session's.
func (s *Session) openVCenter(ctx context.Context, v VCenterConfig, log logr.Logger, allowed, readOnly bool) (*vsphere.Provider, error) {
	u, err := v.Endpoint()
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	if !allowed && !AllowedVCenter(v.Allowed, u) {
		return nil, configErr("refusing a destructive run against vCenter %s: host %s is not in --allow-vcenter or $%s", u, u.Host, EnvAllowedVCenters)
	}
	if u.Scheme == "http" && !readOnly && !vsphere.Loopback(u) {
		// Its journal would tell recover to log in the same way.
		return nil, configErr("refusing a destructive run against vCenter %s over http: its login sends the password in cleartext; http is only for a simulator on loopback", u)
	}
	// A missing username is the user's input, found before dialling.
	if err := v.Validate(); err != nil {
		return nil, &ConfigError{Err: err}
	}
	opts := append([]vsphere.Option{vsphere.WithLogger(log)}, v.Options...)
	if readOnly {
		opts = append(opts, vsphere.WithReadOnly())
	}
	p, err := vsphere.New(ctx, v.Config, opts...)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, p.Close)
	return p, nil
}

// openKind connects to a kind cluster: one faultline created is a test
// cluster and needs no opt-in; any other must be allowed by its context
// name, kind-NAME.
func openKind(ctx context.Context, cfg Config) (providers.Provider, error) {
	name := cfg.Kind.Cluster
	if name == "" {
		return nil, configErr("--provider kind needs --kind-cluster NAME (create one with 'faultline kind up')")
	}
	state, err := kind.DefaultState()
	if err != nil {
		return nil, err
	}
	recorded := kind.IsRecorded(state, name)
	kubeconfig := cfg.Kind.Kubeconfig
	if kubeconfig == "" && recorded {
		kubeconfig = kind.KubeconfigPath(state, name)
	}
	if !recorded && !cfg.OptedIn && !Allowed(cfg.Management.Allowed, EnvAllowedContexts, "kind-"+name) {
		return nil, configErr("refusing a destructive run against kind cluster %s: faultline did not create it, and context kind-%s is not in --allow-context or $%s", name, name, EnvAllowedContexts)
	}
	if err := kind.Available(ctx, kind.ExecDocker{}); err != nil {
		return nil, err
	}
	p, err := kind.Open(name, kubeconfig, kind.WithLogger(cfg.Log))
	if err != nil {
		return nil, configErr("--kind-cluster %s: %v", name, err)
	}
	return p, nil
}

// Allowed tells whether name is in list or in the comma-separated
// environment variable env.
func Allowed(list []string, env, name string) bool {
	for _, a := range withEnv(list, env) {
		if a == name {
			return true
		}
	}
	return false
}

// AllowedVCenter tells whether the vCenter at u is in list or in
// $FAULTLINE_ALLOWED_VCENTERS, by host:port or host name.
func AllowedVCenter(list []string, u *url.URL) bool {
	for _, a := range withEnv(list, EnvAllowedVCenters) {
		if a == u.Host || a == u.Hostname() || (net.ParseIP(a) == nil && strings.EqualFold(a, u.Hostname())) {
			return true
		}
	}
	return false
}

func withEnv(list []string, env string) []string {
	out := make([]string, 0, len(list))
	for _, a := range list {
		out = append(out, strings.TrimSpace(a))
	}
	if v := os.Getenv(env); v != "" {
		for _, a := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(a))
		}
	}
	return out
}
