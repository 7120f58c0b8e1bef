package session

import (
	"context"

	"github.com/faultline-dev/faultline/providers/kind"
)

// openKind connects to a kind cluster: one faultline created is a test
// cluster and needs no opt-in; any other must be allowed by its context
// name, kind-NAME.
func (s *Session) openKind(ctx context.Context, cfg Config) error {
	name := cfg.Kind.Cluster
	if name == "" {
		return configErr("--provider kind needs --kind-cluster NAME (create one with 'faultline kind up')")
	}
	state, err := kind.DefaultState()
	if err != nil {
		return err
	}
	recorded := kind.IsRecorded(state, name)
	kubeconfig := cfg.Kind.Kubeconfig
	if kubeconfig == "" && recorded {
		kubeconfig = kind.KubeconfigPath(state, name)
	}
	if !recorded && !cfg.OptedIn && !Allowed(cfg.Management.Allowed, EnvAllowedContexts, "kind-"+name) {
		return configErr("refusing a destructive run against kind cluster %s: faultline did not create it, and context kind-%s is not in --allow-context or $%s", name, name, EnvAllowedContexts)
	}
	if err := kind.Available(ctx, kind.ExecDocker{}); err != nil {
		return err
	}
	p, err := kind.Open(name, kubeconfig, kind.WithLogger(cfg.Log))
	if err != nil {
		return configErr("--kind-cluster %s: %v", name, err)
	}
	s.Provider = p
	return nil
}

// KindKubeconfig is a kubeconfig file of the kind cluster name (one
// faultline created, or kind's own), and how to remove it when it was
// written for the caller.
func KindKubeconfig(name string) (path string, cleanup func(), err error) {
	state, err := kind.DefaultState()
	if err != nil {
		return "", nil, err
	}
	return kind.KubeconfigFile(state, name)
}
