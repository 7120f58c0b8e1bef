package management

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/config"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// inventoryProvider is one provider of a stack as `clusterctl init` records
// it: its name (the manifest label), type and namespace.
type inventoryProvider struct {
	name, namespace string
	kind            clusterctlv1.ProviderType
	capv            bool
}

// inventoryProviders are the providers of every stack, as clusterctl init
// --infrastructure vsphere installs them.
var inventoryProviders = []inventoryProvider{
	{name: "cluster-api", namespace: "capi-system", kind: clusterctlv1.CoreProviderType},
	{name: "bootstrap-kubeadm", namespace: "capi-kubeadm-bootstrap-system", kind: clusterctlv1.BootstrapProviderType},
	{name: "control-plane-kubeadm", namespace: "capi-kubeadm-control-plane-system", kind: clusterctlv1.ControlPlaneProviderType},
	{name: "infrastructure-vsphere", namespace: "capv-system", kind: clusterctlv1.InfrastructureProviderType, capv: true},
}

// writeInventory records the running stack in clusterctl's inventory
// (providers.clusterctl.cluster.x-k8s.io, its CRD installed first), as
// `clusterctl init` and `clusterctl upgrade apply` write it: what
// clusterctl and `faultline run --provider capi` read to tell the release
// a management cluster runs.
func (m *Plane) writeInventory(ctx context.Context) error {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, apiextensionsv1.AddToScheme, clusterctlv1.AddToScheme} {
		if err := add(s); err != nil {
			return err
		}
	}
	c, err := client.New(m.cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("clusterctl inventory: %w", err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(clusterctlconfig.ClusterctlAPIManifest, &crd); err != nil {
		return fmt.Errorf("clusterctl inventory: its CRD: %w", err)
	}
	if err := c.Create(ctx, &crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("clusterctl inventory: install its CRD: %w", err)
	}
	for _, p := range inventoryProviders {
		version := m.stack.ClusterAPI
		if p.capv {
			version = m.stack.CAPV
		}
		if err := writeProvider(ctx, c, p, version); err != nil {
			return fmt.Errorf("clusterctl inventory: provider %s: %w", p.name, err)
		}
	}
	return nil
}

// writeProvider creates or updates p's namespace and Provider at version;
// the Provider is retried until its CRD is served.
func writeProvider(ctx context.Context, c client.Client, p inventoryProvider, version string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// As clusterctl's InventoryObject labels it.
	labels := map[string]string{clusterctlv1.ClusterctlLabel: "", clusterv1.ProviderNameLabel: p.name,
		clusterctlv1.ClusterctlCoreLabel: clusterctlv1.ClusterctlCoreLabelInventoryValue}
	want := clusterctlv1.Provider{
		ObjectMeta:   metav1.ObjectMeta{Name: p.name, Namespace: p.namespace, Labels: labels},
		ProviderName: trimType(p), Type: string(p.kind), Version: version,
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var have clusterctlv1.Provider
		err := c.Get(ctx, client.ObjectKeyFromObject(&want), &have)
		switch {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, want.DeepCopy())
		case err == nil:
			have.ProviderName, have.Type, have.Version, have.Labels = want.ProviderName, want.Type, want.Version, want.Labels
			err = c.Update(ctx, &have)
		}
		// Until the CRD is established its kind is not served.
		return err == nil, nil //nolint:nilerr // retried until the timeout
	})
}

// trimType is p's providerName: its manifest label without the type
// prefix clusterctl adds ("infrastructure-vsphere" is vsphere).
func trimType(p inventoryProvider) string {
	for _, prefix := range []string{"bootstrap-", "control-plane-", "infrastructure-"} {
		if len(p.name) > len(prefix) && p.name[:len(prefix)] == prefix {
			return p.name[len(prefix):]
		}
	}
	return p.name
}
