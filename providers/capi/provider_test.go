package capi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
)

func machine(name string, labels map[string]string, phase string) *clusterv1.Machine {
	l := map[string]string{clusterv1.ClusterNameLabel: "c1"}
	for k, v := range labels {
		l[k] = v
	}
	return &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: l, UID: types.UID("uid-" + name)},
		Spec:       clusterv1.MachineSpec{ClusterName: "c1", ProviderID: "vsphere://" + name},
		Status:     clusterv1.MachineStatus{Phase: phase},
	}
}

var (
	cp = map[string]string{clusterv1.MachineControlPlaneLabel: "", clusterv1.MachineControlPlaneNameLabel: "c1-cp"}
	md = map[string]string{clusterv1.MachineDeploymentNameLabel: "c1-md-0"}
)

func newProvider(t *testing.T, objs ...runtime.Object) *capi.Provider {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clusterv1.AddToScheme, controlplanev1.AddToScheme, corev1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return capi.New(fake.NewClientBuilder().WithScheme(s).WithRuntimeObjects(objs...).Build())
}

func names(objs []providers.Object) string {
	var n []string
	for _, o := range objs {
		n = append(n, o.Name)
	}
	return strings.Join(n, ",")
}

func TestResolve(t *testing.T) {
	t.Parallel()
	p := newProvider(t,
		machine("cp-1", cp, "Running"), machine("cp-2", cp, "Running"),
		machine("w-1", md, "Running"), machine("w-2", md, "Running"),
		machine("other", map[string]string{clusterv1.MachineDeploymentNameLabel: "c1-md-1"}, "Running"),
	)
	tests := []struct {
		name, want string
		sel        providers.Selector
	}{
		{"control planes", "cp-1,cp-2", providers.Selector{Role: "control-plane"}},
		{"workers", "other,w-1,w-2", providers.Selector{Role: "worker"}},
		{"one MachineDeployment", "w-1,w-2", providers.Selector{MachineDeployment: "c1-md-0"}},
		{"the KCP", "cp-1,cp-2", providers.Selector{ControlPlane: "c1-cp"}},
		{"another KCP", "", providers.Selector{ControlPlane: "nope"}},
		{"by providerID", "w-2", providers.Selector{ProviderID: "vsphere://w-2"}},
		{"by cluster", "cp-1,cp-2,other,w-1,w-2", providers.Selector{Cluster: "ns/c1"}},
		{"another cluster", "", providers.Selector{Cluster: "ns/c2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := p.Resolve(context.Background(), tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tc.want {
				t.Errorf("got %q, want %q", names(got), tc.want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	p := newProvider(t, machine("w-1", md, "Running"))
	if _, err := p.Resolve(context.Background(), providers.Selector{Role: "boss"}); err == nil || !strings.Contains(err.Error(), `role "boss": expected control-plane or worker`) {
		t.Errorf("bad role: %v", err)
	}
	if _, err := p.Resolve(context.Background(), providers.Selector{VM: "x"}); !errors.Is(err, providers.ErrUnsupported) {
		t.Errorf("vm selector: %v, want ErrUnsupported", err)
	}
}

func TestReplacementsAndOwner(t *testing.T) {
	t.Parallel()
	replicas := int32(2)
	mdObj := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "c1-md-0", Namespace: "ns"}, Spec: clusterv1.MachineDeploymentSpec{Replicas: &replicas}}
	p := newProvider(t, mdObj, machine("w-1", md, "Running"), machine("w-2", md, "Running"))
	ctx := context.Background()
	victims, err := p.Resolve(ctx, providers.Selector{MachineDeployment: "c1-md-0"})
	if err != nil || len(victims) != 2 {
		t.Fatalf("resolve: %v %v", victims, err)
	}
	reps, err := p.Replacements(ctx, victims[0])
	if err != nil || len(reps) != 0 {
		t.Fatalf("replacements before any: %v %v", reps, err)
	}
	st, err := p.Machine(ctx, providers.Object{Kind: "Machine", Name: "gone", ID: "uid-gone", Attributes: map[providers.Attribute]string{"namespace": "ns"}})
	if err != nil || !st.Gone {
		t.Errorf("a missing Machine reads as gone: %+v %v", st, err)
	}
	o, err := p.Owner(ctx, victims[0])
	if err != nil {
		t.Fatal(err)
	}
	// No workload cluster here: Machines without a Node do not count as healthy.
	if o.Kind != "MachineDeployment" || o.Desired != 2 || o.Healthy != 0 {
		t.Errorf("owner %+v", o)
	}
}

// Node faults on Machines run in their VMs' guests: without a vCenter
// they are a capability the provider lacks, with the reason.
func TestNodeFaultsNeedVCenter(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	if providers.HasCapability(p, providers.CapNodeKubelet) {
		t.Error("NodeKubelet without a vCenter: want it missing")
	}
	err := p.CapabilityUnavailable(providers.CapNodeStaticPods)
	if !errors.Is(err, providers.ErrUnsupported) || !strings.Contains(err.Error(), "no vCenter is configured") {
		t.Errorf("NodeStaticPods without a vCenter: %v", err)
	}
	if err := p.CapabilityUnavailable(providers.CapObjects); err != nil {
		t.Errorf("Objects needs no vCenter: %v", err)
	}
}
