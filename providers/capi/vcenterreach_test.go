package capi

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/faultline-dev/faultline/providers"
)

var vsphereCluster = schema.GroupVersionKind{Group: infraGroup, Version: "v1beta1", Kind: "VSphereCluster"}

// cutCluster is a management cluster with CAPV's pod in capv-system and
// a VSphereCluster naming vCenter 192.0.2.10, plus objs. Probe pods
// "run" as they are created: they reach vCenter unless the probe's
// policy exists and enforcing says the network enforces it. It is a
// stand-in for a kubelet and a CNI, for the cut's own logic; the kind
// tier runs the probe for real.
func cutCluster(t *testing.T, enforcing bool, objs ...client.Object) (*Provider, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{vsphereCluster.GroupVersion(), corev1.SchemeGroupVersion, networkingv1.SchemeGroupVersion})
	mapper.Add(vsphereCluster, meta.RESTScopeNamespace)
	for _, gvk := range []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Pod"), networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy")} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	vc := &unstructured.Unstructured{}
	vc.SetGroupVersionKind(vsphereCluster)
	vc.SetNamespace("ns")
	vc.SetName("c1")
	vc.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": "c1"})
	_ = unstructured.SetNestedField(vc.Object, "192.0.2.10", "spec", "server")
	capv := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capv-system", Name: "capv-controller-manager-1", Labels: map[string]string{capvLabel: "infrastructure-vsphere", "control-plane": "controller-manager"}},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "manager", Image: "capv"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	var c client.Client
	c = fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(append([]client.Object{vc, capv}, objs...)...).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, w client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if pod, ok := obj.(*corev1.Pod); ok && pod.Labels[labelProbe] != "" {
				code := int32(ReachedAll)
				err := w.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: cutName + "-probe"}, &networkingv1.NetworkPolicy{})
				if err == nil && enforcing {
					code = ReachedNone
				}
				pod.Name = pod.GenerateName + "x"
				pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: "probed 192.0.2.10:443"}}}}
			}
			return w.Create(ctx, obj, opts...)
		}}).Build()
	return New(c, WithCut("", "faultline.dev/faultline:v0.1.0-test")), c
}

// mine lists what the cut left: its policies and probe pods.
func mine(t *testing.T, c client.Client) []string {
	t.Helper()
	var out []string
	var pols networkingv1.NetworkPolicyList
	var pods corev1.PodList
	if err := c.List(context.Background(), &pols); err != nil {
		t.Fatal(err)
	}
	if err := c.List(context.Background(), &pods, client.MatchingLabels{labelCut: "true"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pols.Items {
		out = append(out, "NetworkPolicy "+p.Namespace+"/"+p.Name)
	}
	for _, p := range pods.Items {
		out = append(out, "Pod "+p.Namespace+"/"+p.Name)
	}
	return out
}

// TestVCenterCut: where the network enforces the probe's policy, the cut
// leaves a policy on CAPV's pods that excepts vCenter's address, and the
// restore removes every object the cut made; where it does not, the
// fault is refused, saying so, and nothing is left.
func TestVCenterCut(t *testing.T) {
	ctx := context.Background()
	p, c := cutCluster(t, true)
	if err := p.SetVCenterReachable(ctx, false); err != nil {
		t.Fatal(err)
	}
	var pol networkingv1.NetworkPolicy
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capv-system", Name: cutName}, &pol); err != nil {
		t.Fatalf("CAPV's policy: %v (left: %v)", err, mine(t, c))
	}
	if got := pol.Spec.PodSelector.MatchLabels[capvLabel]; got != "infrastructure-vsphere" {
		t.Errorf("policy selects %v, want CAPV's pods", pol.Spec.PodSelector)
	}
	if got := pol.Spec.Egress[0].To[0].IPBlock.Except; len(got) != 1 || got[0] != "192.0.2.10/32" {
		t.Errorf("policy excepts %v, want vCenter's address", got)
	}
	if err := p.SetVCenterReachable(ctx, true); err != nil {
		t.Fatal(err)
	}
	if left := mine(t, c); len(left) != 0 {
		t.Errorf("left after the restore: %v", left)
	}

	p, c = cutCluster(t, false)
	err := p.SetVCenterReachable(ctx, false)
	if !errors.Is(err, providers.ErrUnsupported) || !strings.Contains(err.Error(), "does not enforce NetworkPolicy") || !strings.Contains(err.Error(), "probed 192.0.2.10:443") {
		t.Errorf("cut on a network that enforces nothing: %v", err)
	}
	if left := mine(t, c); len(left) != 0 {
		t.Errorf("left after the refusal: %v", left)
	}
}

// TestVCenterCutRefuses: what would let CAPV through a cut refuses it
// before anything is created, naming what.
func TestVCenterCutRefuses(t *testing.T) {
	allowAll := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capv-system", Name: "capv-egress"},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(443))}}}},
		},
	}
	for _, tc := range []struct {
		name string
		objs []client.Object
		opts []Option
		want string
	}{
		{"another policy", []client.Object{allowAll}, nil, "NetworkPolicy capv-system/capv-egress lets CAPV's pod capv-controller-manager-1 reach vCenter 192.0.2.10:443"},
		{"no vCenter in scope", nil, []Option{WithCut("other/c2", "img")}, "no VSphereCluster or VSphereVM names a vCenter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := cutCluster(t, true, tc.objs...)
			for _, o := range tc.opts {
				o(p)
			}
			err := p.SetVCenterReachable(context.Background(), false)
			if !errors.Is(err, providers.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if pf := p.Preflight(context.Background(), providers.CapVCenterReach, providers.Object{}); pf == nil || !strings.Contains(pf.Error(), tc.want) {
				t.Errorf("preflight: %v, want %q", pf, tc.want)
			}
			if left := mine(t, c); len(left) > len(tc.objs) {
				t.Errorf("left: %v", left)
			}
		})
	}
}

// TestVCenterCutNeedsImage: without faultline's image the capability is
// unavailable, so a scenario that requires it is skipped, saying why.
func TestVCenterCutNeedsImage(t *testing.T) {
	p, _ := cutCluster(t, true)
	WithCut("", "")(p)
	if providers.HasCapability(p, providers.CapVCenterReach) {
		t.Fatal("VCenterReach usable without an image")
	}
	if err := providers.Unsupported(p, providers.CapVCenterReach); !errors.Is(err, providers.ErrUnsupported) || errors.Is(err, providers.ErrNotConfigured) || !strings.Contains(err.Error(), "--image") {
		t.Errorf("unsupported: %v", err)
	}
	if err := p.SetVCenterReachable(context.Background(), false); err == nil || !strings.Contains(err.Error(), "no image to prove the cut with") {
		t.Errorf("cut without an image: %v", err)
	}
}

// TestLetsThrough: a policy lets a pod through to an address when it
// selects the pod, restricts egress, and has a rule whose ports and peers
// both take it.
func TestLetsThrough(t *testing.T) {
	ip := net.ParseIP("192.0.2.10")
	capv := map[string]string{capvLabel: "infrastructure-vsphere"}
	pol := func(sel map[string]string, rules ...networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
		return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, Egress: rules}}
	}
	block := func(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
		return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
	}
	port := func(n int32, end *int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(n)), EndPort: end}
	}
	for _, tc := range []struct {
		name string
		pol  networkingv1.NetworkPolicy
		want bool
	}{
		{"allow all", pol(nil, networkingv1.NetworkPolicyEgressRule{}), true},
		{"deny all", pol(nil), false},
		{"other pods", pol(map[string]string{"app": "x"}, networkingv1.NetworkPolicyEgressRule{}), false},
		{"its block", pol(capv, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{block("192.0.2.0/24")}}), true},
		{"excepted", pol(capv, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{block("192.0.2.0/24", "192.0.2.10/32")}}), false},
		{"pods only", pol(capv, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}}), false},
		{"DNS only", pol(capv, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(53, nil)}}), false},
		{"port range", pol(capv, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(400, ptr.To(int32(500)))}}), true},
		{"named port", pol(capv, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("https"))}}}), false},
	} {
		if got := letsThrough([]networkingv1.NetworkPolicy{tc.pol}, capv, ip, 443) != ""; got != tc.want {
			t.Errorf("%s: lets through %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestNoProxy: NO_PROXY as Go's proxy rule reads it.
func TestNoProxy(t *testing.T) {
	e := endpoint{host: "vcenter.example.com", port: 443, ips: []net.IP{net.ParseIP("192.0.2.10")}}
	for list, want := range map[string]bool{
		"":                          false,
		"*":                         true,
		"vcenter.example.com":       true,
		"example.com":               true,
		".example.com":              true,
		"ample.com":                 false,
		"10.0.0.0/8,192.0.2.0/24":   true,
		"10.0.0.0/8, other.example": false,
	} {
		env := []corev1.EnvVar{{Name: "NO_PROXY", Value: list}}
		if got := noProxy(env, []endpoint{e}); got != want {
			t.Errorf("NO_PROXY=%q: %t, want %t", list, got, want)
		}
	}
}
