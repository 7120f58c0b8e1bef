package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// envAllowedContexts lists kubeconfig contexts destructive runs may touch,
// comma separated, like repeated --allow-context flags.
const envAllowedContexts = "FAULTLINE_ALLOWED_CONTEXTS"

// clusterFlags reach a Cluster API management cluster, kubectl style.
type clusterFlags struct {
	kubeconfig string
	context    string
	allowed    []string
	// flag names the kubeconfig flag in errors (default --kubeconfig).
	flag string
}

// prefix names the flag before an error, unless it is --kubeconfig.
func (f *clusterFlags) prefix() string {
	if f.flag == "" {
		return ""
	}
	return f.flag + ": "
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
	fs.StringSliceVar(&f.allowed, "allow-context", nil, "kubeconfig context a destructive run may touch; repeatable (also $"+envAllowedContexts+")")
}

// open connects to the management cluster and, when a vCenter is
// configured, to the vCenter behind it for VM faults. Both must be allowed
// explicitly.
func (f *clusterFlags) open(ctx context.Context, vc *vcenterFlags, log logr.Logger) (providers.Provider, func(context.Context) error, error) {
	c, source, name, err := f.client(true)
	if err != nil {
		return nil, nil, err
	}
	opts := []capi.Option{capi.WithLogger(log), capi.WithKubeconfig(source, name)}
	closeFn := func(context.Context) error { return nil }
	vcfg, err := vc.merged()
	if err != nil {
		return nil, nil, err
	}
	if vcfg.URL != "" {
		if err := vc.checkAllowed(vcfg); err != nil {
			return nil, nil, err
		}
		vopts, err := vc.options(log)
		if err != nil {
			return nil, nil, err
		}
		p, err := vsphere.New(ctx, vcfg, vopts...)
		if err != nil {
			return nil, nil, infraErr(err)
		}
		opts = append(opts, capi.WithVCenter(p))
		closeFn = p.Close
	}
	return capi.New(c, opts...), closeFn, nil
}

// client is a client of the management cluster the flags name, with the
// kubeconfig source and context it came from; destructive asks that the
// context be allowed.
func (f *clusterFlags) client(destructive bool) (client.Client, string, string, error) {
	c, source, name, err := capi.NewClient(f.kubeconfig, f.context)
	switch {
	case capi.IsKubeconfigError(err) && f.kubeconfig != "" && os.IsNotExist(errors.Unwrap(err)):
		return nil, "", "", usageErr("%s %s: %v", f.flagName(), f.kubeconfig, err)
	case capi.IsKubeconfigError(err):
		return nil, "", "", usageErr("%s%v", f.prefix(), err)
	case err != nil:
		return nil, "", "", infraErr(err)
	}
	if destructive && !f.isAllowed(name) {
		return nil, "", "", usageErr("refusing a destructive run against context %q: it is not in --allow-context or $%s", name, envAllowedContexts)
	}
	return c, source, name, nil
}

func (f *clusterFlags) isAllowed(name string) bool {
	allowed := append([]string(nil), f.allowed...)
	if env := os.Getenv(envAllowedContexts); env != "" {
		allowed = append(allowed, strings.Split(env, ",")...)
	}
	for _, a := range allowed {
		if strings.TrimSpace(a) == name {
			return true
		}
	}
	return false
}
