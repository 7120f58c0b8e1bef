package main

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/framework"
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
func (f *clusterFlags) open(ctx context.Context, vc *vcenterFlags, log logr.Logger) (framework.Provider, func(context.Context) error, error) {
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
		p, err := vsphere.New(ctx, vcfg, vsphere.WithLogger(log))
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
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch {
	case strings.ContainsRune(f.kubeconfig, os.PathListSeparator):
		// A recovery: the $KUBECONFIG list the run loaded.
		rules.Precedence = filepath.SplitList(f.kubeconfig)
	case f.kubeconfig != "":
		if _, err := os.Stat(f.kubeconfig); err != nil {
			return nil, "", "", usageErr("%s %s: %v", f.flagName(), f.kubeconfig, err)
		}
		rules.ExplicitPath = f.kubeconfig
	}
	source := rules.ExplicitPath
	if source == "" {
		source = strings.Join(rules.GetLoadingPrecedence(), string(os.PathListSeparator))
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, "", "", usageErr("%skubeconfig: %v", f.prefix(), err)
	}
	name := f.context
	if name == "" {
		name = raw.CurrentContext
	}
	if _, ok := raw.Contexts[name]; !ok || name == "" {
		var names []string
		for n := range raw.Contexts {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, "", "", usageErr("%skubeconfig context %q not found; it has: %s", f.prefix(), name, strings.Join(names, ", "))
	}
	if destructive && !f.isAllowed(name) {
		return nil, "", "", usageErr("refusing a destructive run against context %q: it is not in --allow-context or $%s", name, envAllowedContexts)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{CurrentContext: name}).ClientConfig()
	if err != nil {
		return nil, "", "", usageErr("%skubeconfig context %q: %v", f.prefix(), name, err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, controlplanev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, "", "", infraErr(err)
		}
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", "", infraErr(err)
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
