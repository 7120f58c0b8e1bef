package capi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/capi/versioned"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/providers/lab/management"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// TestIntegrationManagementReleases: the provider resolves a worker and
// powers its VM off through the management API of Cluster API v1.10.4,
// which serves core v1beta1 only, and of the compiled release (v1beta2):
// each a real kube-apiserver with that release's CRDs from its module
// source, and vcsim as vCenter.
func TestIntegrationManagementReleases(t *testing.T) {
	labtest.Require(t)
	compiled := lab.Stacks()[0].ClusterAPI
	for _, tc := range []struct {
		release string
		older   bool // core v1beta2 is not served
	}{{"v1.10.4", true}, {compiled, false}} {
		t.Run(tc.release, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			kubeconfig := managementAPI(t, tc.release)
			sim, err := vcsim.Start(vcsim.Input{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sim.Close)
			vc, err := vsphere.New(ctx, sim.Config())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = vc.Close(context.Background()) })
			vms, err := vc.ListVMs(ctx)
			if err != nil || len(vms) == 0 {
				t.Fatalf("vcsim VMs: %v, %v", vms, err)
			}
			c, _, _, err := capi.NewClient(kubeconfig, "")
			if err != nil {
				t.Fatal(err)
			}
			older, err := c.(*versioned.Client).Older(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(older) > 0; got != tc.older {
				t.Fatalf("versions read as older ones: %v; want some: %t", older, tc.older)
			}
			createWorker(ctx, t, c, "vsphere://"+vms[0].UUID, tc.older)
			if tc.older {
				readsOlderHealthCheck(ctx, t, c)
			}

			p := capi.New(c, capi.WithVCenter(vc))
			workers, err := p.Resolve(ctx, providers.Selector{Cluster: "ns/c1", Role: providers.RoleWorker})
			if err != nil || len(workers) != 1 || workers[0].Name != "worker-0" {
				t.Fatalf("resolve the worker: %v, %v", workers, err)
			}
			if err := p.PowerOff(ctx, workers[0]); err != nil {
				t.Fatal(err)
			}
			after, err := vc.ListVMs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, vm := range after {
				want := providers.PoweredOn // vcsim's VMs start on
				if vm.UUID == vms[0].UUID {
					want = providers.PoweredOff
				}
				if vm.PowerState != want {
					t.Errorf("VM %s (the worker's: %t) is %s after the power-off through Cluster API %s, want %s", vm.Name, vm.UUID == vms[0].UUID, vm.PowerState, tc.release, want)
				}
			}
		})
	}
}

// managementAPI starts a kube-apiserver with the core CRDs of Cluster API
// release, from its module source through the module proxy, and returns
// a kubeconfig of its admin.
func managementAPI(t *testing.T, release string) string {
	t.Helper()
	dir, err := management.ModuleDir(t.Context(), "sigs.k8s.io/cluster-api@"+release)
	if err != nil {
		t.Fatal(err)
	}
	assets, err := lab.FindAssets("")
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(dir, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// createWorker creates Cluster ns/c1 and its worker Machine worker-0 on
// the VM of providerID, in v1beta1 when older, as a cluster of that
// release holds them.
func createWorker(ctx context.Context, t *testing.T, c client.Client, providerID string, older bool) {
	t.Helper()
	labels := map[string]string{clusterv1.ClusterNameLabel: "c1", clusterv1.MachineDeploymentNameLabel: "c1-md-0"}
	var objs []client.Object
	if older {
		objs = []client.Object{
			&clusterv1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"}},
			&clusterv1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Namespace: "ns", Labels: labels},
				Spec: clusterv1beta1.MachineSpec{ClusterName: "c1", ProviderID: &providerID,
					Bootstrap:         clusterv1beta1.Bootstrap{DataSecretName: ptr.To("boot")},
					InfrastructureRef: corev1.ObjectReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "VSphereMachine", Name: "worker-0"}}},
		}
	} else {
		objs = []client.Object{
			&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"}, Spec: clusterv1.ClusterSpec{Paused: ptr.To(true)}},
			&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Namespace: "ns", Labels: labels},
				Spec: clusterv1.MachineSpec{ClusterName: "c1", ProviderID: providerID,
					Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("boot")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "VSphereMachine", Name: "worker-0"}}},
		}
	}
	objs = append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}}, objs...)
	for _, o := range objs {
		// Each in its own version: the client passes a served version
		// through as it is.
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
}

// readsOlderHealthCheck: a v1beta1 MachineHealthCheck (maxUnhealthy,
// nodeStartupTimeout) reads as v1beta2 (remediation.triggerIf,
// checks.nodeStartupTimeoutSeconds), the one vocabulary of the probes
// and checks.
func readsOlderHealthCheck(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	old := &clusterv1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-workers", Namespace: "ns"},
		Spec: clusterv1beta1.MachineHealthCheckSpec{
			ClusterName:        "c1",
			Selector:           metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineDeploymentNameLabel: "c1-md-0"}},
			MaxUnhealthy:       ptr.To(intstr.FromString("40%")),
			NodeStartupTimeout: &metav1.Duration{Duration: 7 * time.Minute},
			UnhealthyConditions: []clusterv1beta1.UnhealthyCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Timeout: metav1.Duration{Duration: 5 * time.Minute}},
			},
		},
	}
	if err := c.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	var mhc clusterv1.MachineHealthCheck
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), &mhc); err != nil {
		t.Fatalf("read a v1beta1 MachineHealthCheck as v1beta2: %v", err)
	}
	trigger, startup := mhc.Spec.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo, mhc.Spec.Checks.NodeStartupTimeoutSeconds
	if trigger == nil || trigger.String() != "40%" || startup == nil || *startup != 420 ||
		len(mhc.Spec.Checks.UnhealthyNodeConditions) != 1 || mhc.Spec.Checks.UnhealthyNodeConditions[0].TimeoutSeconds == nil ||
		*mhc.Spec.Checks.UnhealthyNodeConditions[0].TimeoutSeconds != 300 {
		t.Errorf("v1beta1 MachineHealthCheck read as v1beta2: %+v", mhc.Spec)
	}
}
