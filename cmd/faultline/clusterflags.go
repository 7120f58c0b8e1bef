package main

import (
	"github.com/faultline-dev/faultline/session"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterFlags reach a Cluster API management cluster, kubectl style.
type clusterFlags struct {
	kubeconfig string
	context    string
	allowed    []string
	// flag names the kubeconfig flag in errors (default --kubeconfig).
	flag string
}

func (f *clusterFlags) flagName() string {
	if f.flag == "" {
		return "--kubeconfig"
	}
	return f.flag
}

func (f *clusterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the Cluster API management cluster (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context to use (default the current context)")
	fs.StringSliceVar(&f.allowed, "allow-context", nil, "kubeconfig context a destructive run may touch; repeatable (also $"+session.EnvAllowedContexts+")")
}

// config is the session's management cluster of the flags.
func (f *clusterFlags) config() session.ManagementConfig {
	return session.ManagementConfig{Kubeconfig: f.kubeconfig, Context: f.context, Allowed: f.allowed}
}

// client is a client of the cluster the flags name, for reading, with the
// kubeconfig source and context it came from.
func (f *clusterFlags) client() (client.Client, string, string, error) {
	c, source, name, err := session.ManagementClient(f.config(), f.flagName())
	if err != nil {
		return nil, "", "", sessionErr(err)
	}
	return c, source, name, nil
}
