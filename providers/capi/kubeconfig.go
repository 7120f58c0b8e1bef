package capi

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/internal/regularfile"

	"github.com/faultline-dev/faultline/providers/capi/versioned"
)

// KubeconfigError is a kubeconfig that cannot be used: missing, unreadable,
// or without the context asked for. It is the user's input, not the
// cluster, that is wrong.
type KubeconfigError struct{ Err error }

func (e *KubeconfigError) Error() string { return e.Err.Error() }
func (e *KubeconfigError) Unwrap() error { return e.Err }

// kubeconfigLoadError says what is wrong with a kubeconfig client-go could
// not load, in a user's words: client-go reports a file that is not a
// kubeconfig with the Go type it failed to decode into.
func kubeconfigLoadError(err error) error {
	msg := err.Error()
	rest, loading := strings.CutPrefix(msg, "error loading config file ")
	file, cause, ok := strings.Cut(rest, ": ")
	if loading && ok && !strings.Contains(cause, "permission denied") && !strings.Contains(cause, "is a directory") {
		// It was read, but does not decode as a kubeconfig.
		return fmt.Errorf("kubeconfig %s: not a kubeconfig (expected YAML with apiVersion: v1 and kind: Config)", strings.Trim(file, `"`))
	}
	return fmt.Errorf("kubeconfig: %w", err)
}

// NewClient is a client of the management cluster a kubeconfig names, the
// way kubectl finds it: kubeconfig is a file, a list of files ($KUBECONFIG
// style, as a recovery replays it) or empty ($KUBECONFIG, then
// ~/.kube/config); context is empty for the current one. It returns the
// kubeconfig source and context it used. Nothing is contacted yet.
func NewClient(kubeconfig, context string) (client.WithWatch, string, string, error) {
	cfg, source, name, err := RESTConfig(kubeconfig, context)
	if err != nil {
		return nil, "", "", err
	}
	c, err := clientFor(cfg)
	if err != nil {
		return nil, "", "", err
	}
	return c, source, name, nil
}

// Identity is who a kubeconfig context reaches: its API server's URL and
// the SHA-256 (hex) of the CA bundle that verifies it, empty when TLS is
// not verified (insecure-skip-tls-verify) or left to the system's roots.
// `faultline recover` compares it with the one recorded at injection.
func Identity(kubeconfig, context string) (server, caSHA256 string, err error) {
	cfg, _, _, err := RESTConfig(kubeconfig, context)
	if err != nil {
		return "", "", err
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return "", "", &KubeconfigError{fmt.Errorf("kubeconfig context %q: CA file: %w", context, err)}
		}
	}
	if cfg.Insecure || len(ca) == 0 {
		return cfg.Host, "", nil
	}
	return cfg.Host, fmt.Sprintf("%x", sha256.Sum256(ca)), nil
}

// RESTConfig loads a kubeconfig as NewClient does: the REST config of
// context, the kubeconfig source and the context's name.
func RESTConfig(kubeconfig, context string) (*rest.Config, string, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch {
	case strings.ContainsRune(kubeconfig, os.PathListSeparator):
		rules.Precedence = filepath.SplitList(kubeconfig)
	case kubeconfig != "":
		rules.ExplicitPath = kubeconfig
	}
	// client-go reads them itself: each must be a regular file, read
	// without blocking (one missing from a list is skipped, as kubectl
	// does).
	for _, path := range rules.GetLoadingPrecedence() {
		err := regularfile.Check(path, regularfile.Kubeconfig)
		if errors.Is(err, fs.ErrNotExist) && path != rules.ExplicitPath {
			continue
		}
		if err != nil {
			return nil, "", "", &KubeconfigError{err}
		}
	}
	source := rules.ExplicitPath
	if source == "" {
		source = strings.Join(rules.GetLoadingPrecedence(), string(os.PathListSeparator))
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, "", "", &KubeconfigError{kubeconfigLoadError(err)}
	}
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	if _, ok := raw.Contexts[name]; !ok || name == "" {
		var names []string
		for n := range raw.Contexts {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, "", "", &KubeconfigError{fmt.Errorf("kubeconfig context %q not found; it has: %s", name, strings.Join(names, ", "))}
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{CurrentContext: name}).ClientConfig()
	if err != nil {
		return nil, "", "", &KubeconfigError{fmt.Errorf("kubeconfig context %q: %w", name, err)}
	}
	return cfg, source, name, nil
}

// InClusterContext is the context name of the in-cluster configuration.
const InClusterContext = "in-cluster"

// InCluster tells whether the process runs in a pod with a service
// account, where NewInClusterClient works.
func InCluster() bool {
	_, err := rest.InClusterConfig()
	return err == nil
}

// NewInClusterClient is NewClient for the cluster the process runs in,
// through its pod's service account (faultline's CronJob); its context
// name is InClusterContext.
func NewInClusterClient() (client.WithWatch, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, &KubeconfigError{fmt.Errorf("in-cluster configuration: %w", err)}
	}
	return clientFor(cfg)
}

// clientFor is a client of cfg that knows Cluster API's core and control
// plane kinds.
func clientFor(cfg *rest.Config) (client.WithWatch, error) {
	// Probes poll several Machines every few hundred milliseconds;
	// client-go's default of 5 requests a second would queue them until
	// their readings fail for want of time, not because of the cluster
	// (as for the workload clusters' clients).
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.AddToScheme, controlplanev1.AddToScheme,
		clusterv1beta1.AddToScheme, controlplanev1beta1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	// Cluster API serves v1beta2 from v1.11; on an older management
	// cluster the provider reads v1beta1, converted to v1beta2 by the
	// compiled release's conversions, so probes keep one vocabulary.
	return versioned.New(c, cfg)
}

// IsKubeconfigError tells whether err is a KubeconfigError.
func IsKubeconfigError(err error) bool {
	var k *KubeconfigError
	return errors.As(err, &k)
}
