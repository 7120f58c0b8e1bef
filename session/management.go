package session

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/lab"
)

// openManagement reaches the management cluster and, when a vCenter is
// configured, the vCenter behind it for VM faults.
func (s *Session) openManagement(ctx context.Context, cfg Config) error {
	c, source, name, err := ManagementClient(cfg.Management, "--kubeconfig")
	if err != nil {
		return err
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
		return configErr("refusing a destructive run against context %q: it is not in --allow-context or $%s", name, EnvAllowedContexts)
	}
	opts := []capi.Option{capi.WithLogger(cfg.Log), capi.WithKubeconfig(source, name), capi.WithCut(cfg.Management.Cluster, cfg.Management.ProbeImage)}
	if cfg.Management.ReadOnly {
		opts = append(opts, capi.WithReadOnly())
	}
	if cfg.Management.Workload != nil {
		opts = append(opts, capi.WithWorkloadClient(cfg.Management.Workload))
	}
	if cfg.VCenter.URL != "" {
		u, err := cfg.VCenter.Endpoint()
		if err != nil {
			return &ConfigError{Err: err}
		}
		// Checked before logging in: a vCenter other than the cluster's
		// has none of its VMs (a check would call each missing, a fault
		// would find none or another cluster's).
		err = capi.CheckServer(ctx, c, cfg.Management.Cluster, u)
		if errors.As(err, new(*capi.ServerMismatchError)) {
			return &ConfigError{Err: err}
		}
		if err != nil {
			return err
		}
		vc, err := s.openVCenter(ctx, cfg.VCenter, cfg.Log, cfg.optedIn(), cfg.Management.ReadOnly)
		if err != nil {
			return err
		}
		opts = append(opts, capi.WithVCenter(vc))
	}
	p := capi.New(c, opts...)
	s.Provider = p
	s.release = inventoryRelease(ctx, p, cfg)
	return nil
}

// inventoryRelease is the release clusterctl's inventory says the
// management cluster runs, nil when it records none (or cannot be read:
// the run goes on, saying so).
func inventoryRelease(ctx context.Context, p *capi.Provider, cfg Config) *engine.Release {
	clusterAPI, capv, err := p.Inventory(ctx)
	if err != nil {
		cfg.Log.Error(err, "the management cluster's release is not recorded in the result")
		return nil
	}
	if clusterAPI == "" {
		return nil
	}
	r := &engine.Release{ClusterAPI: clusterAPI, CAPV: capv}
	if st, err := lab.ParseRelease(clusterAPI + "+" + capv).Resolve(); err == nil && st.ClusterAPI == clusterAPI && st.CAPV == capv {
		r.Stack, r.Untested = st.Name, st.Untested
	}
	return r
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

// ClusterREST is the REST config of a kubeconfig's context, found as
// kubectl finds it (kubeconfig "" is $KUBECONFIG, then ~/.kube/config);
// flag names the kubeconfig in errors.
func ClusterREST(kubeconfig, context, flag string) (*rest.Config, error) {
	cfg, _, _, err := capi.RESTConfig(kubeconfig, context)
	switch {
	case capi.IsKubeconfigError(err) && kubeconfig != "":
		return nil, configErr("%s %s: %v", flag, kubeconfig, err)
	case capi.IsKubeconfigError(err):
		return nil, &ConfigError{Err: err}
	}
	return cfg, err
}
