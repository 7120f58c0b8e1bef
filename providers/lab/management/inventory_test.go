package management

import (
	"context"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// TestInventory: the management cluster's clusterctl inventory names the
// stack's four providers at its versions, labelled as clusterctl labels
// them, and an upgrade's rewrite names the new ones (a real kube-apiserver
// and etcd; clusterctl's own CRD).
func TestInventory(t *testing.T) {
	cfg := apiServer(t).Config
	ctx := context.Background()
	stacks := labconfig.Stacks
	m := &Plane{cfg: cfg, stack: stacks[1]}
	s := clusterctlScheme(t)
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []labconfig.Stack{stacks[1], stacks[0]} {
		m.stack = st
		if err := m.writeInventory(ctx); err != nil {
			t.Fatal(err)
		}
		var list clusterctlv1.ProviderList
		if err := c.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range list.Items {
			got[p.Namespace+"/"+p.Name+" "+p.Type+" "+p.ProviderName] = p.Version
			if _, ok := p.Labels[clusterctlv1.ClusterctlLabel]; !ok || p.Labels["cluster.x-k8s.io/provider"] != p.Name {
				t.Errorf("%s: labels %v", p.Name, p.Labels)
			}
		}
		want := map[string]string{
			"capi-system/cluster-api CoreProvider cluster-api":                                     st.ClusterAPI,
			"capi-kubeadm-bootstrap-system/bootstrap-kubeadm BootstrapProvider kubeadm":            st.ClusterAPI,
			"capi-kubeadm-control-plane-system/control-plane-kubeadm ControlPlaneProvider kubeadm": st.ClusterAPI,
			"capv-system/infrastructure-vsphere InfrastructureProvider vsphere":                    st.CAPV,
		}
		if len(got) != len(want) {
			t.Errorf("%s: inventory %v, want %v", st.Name, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s at %q, want %q", st.Name, k, got[k], v)
			}
		}
	}
}

// apiServer starts a real kube-apiserver and etcd (envtest) for the test,
// stopped at its end.
func apiServer(t *testing.T) *envtest.Environment {
	t.Helper()
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	assets, err := FindAssets("")
	if err != nil {
		if os.Getenv("FAULTLINE_REQUIRE_LAB") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env
}

func clusterctlScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clusterctlv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
