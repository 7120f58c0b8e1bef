package nodesim

import (
	"context"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi/workloadapitest"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Seed 001 in the lab: seven Nodes, a /24 pool of /26 blocks. The first
// four Nodes hold a block each, the rest none; kube-controller-manager has
// /25s for two Nodes only; a dry-run create that a webhook on a blockless
// Node must validate times out with the seed's message, and is admitted
// once the webhook's pod runs on a Node with a block.
func TestCalicoSeed001(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var a *workloadapi.Admitter
	w, cfg, c := workloadapitest.Start(t, ctx, &a)
	clusters := labconfig.NewMap[labCluster]()
	clusters.Set("t", labCluster{spec: labconfig.ClusterSpec{Name: "t", LabSpec: labconfig.LabSpec{ControlPlanes: 1, Network: labconfig.LabNetwork{PodCIDR: "10.202.146.0/24", NodeCIDRMaskSize: 25, CalicoBlockSize: 26}}}})
	s := &Sim{config: config{clusters: clusters}}

	var cidrs []string
	for i := range 7 {
		cidr, err := s.allocatePodCIDR(ctx, w.Client(), "t")
		if err != nil {
			t.Fatal(err)
		}
		cidrs = append(cidrs, cidr)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}, Spec: corev1.NodeSpec{PodCIDR: cidr},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(cidrs, ","); got != "10.202.146.0/25,10.202.146.128/25,,,,," {
		t.Errorf("node pod CIDRs %s, want two /25s then none", got)
	}
	if err := s.ensureCalicoPool(ctx, w.Client(), "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.reconcileCalicoIPAM(ctx, w.Client()); err != nil {
		t.Fatal(err)
	}
	affs := &unstructured.UnstructuredList{}
	affs.SetAPIVersion(calicoAPIVersion)
	affs.SetKind("BlockAffinityList")
	if err := c.List(ctx, affs); err != nil {
		t.Fatalf("list BlockAffinities through the endpoint: %v", err)
	}
	var held []string
	for _, a := range affs.Items {
		node, _, _ := unstructured.NestedString(a.Object, "spec", "node")
		cidr, _, _ := unstructured.NestedString(a.Object, "spec", "cidr")
		held = append(held, node+"="+cidr)
	}
	sort.Strings(held)
	want := "node-0=10.202.146.0/26,node-1=10.202.146.64/26,node-2=10.202.146.128/26,node-3=10.202.146.192/26"
	if got := strings.Join(held, ","); got != want {
		t.Errorf("blocks %s, want %s", got, want)
	}
	if node, err := scheduleWorker(ctx, w.Client(), ""); err != nil || node != "node-6" {
		t.Errorf("webhook pod scheduled on %q (%v), want node-6, the newest", node, err)
	}

	// The webhook, its Service and its Endpoints on node-6.
	refused, err := closedPort()
	if err != nil {
		t.Fatal(err)
	}
	sch := runtime.NewScheme()
	_ = corev1.AddToScheme(sch)
	a, err = workloadapi.NewAdmitter(ctx, workloadapi.AdmitterInput{Config: cfg, Store: w.Client(), Scheme: sch, Refused: refused, Routed: func(ctx context.Context, node string) (bool, error) { return nodeHasBlock(ctx, w.Client(), node) }})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := startPolicyWebhook("metallb-system", "metallb-webhook-service", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hook.close(); err != nil {
			t.Error(err)
		}
	})
	conf := policyConfig([]byte(hook.caPEM))
	conf.Webhooks[0].Name = "ipaddresspoolvalidationwebhook.metallb.io"
	conf.Webhooks[0].ClientConfig.Service = &admissionregv1.ServiceReference{Namespace: "metallb-system", Name: "metallb-webhook-service",
		Path: conf.Webhooks[0].ClientConfig.Service.Path, Port: conf.Webhooks[0].ClientConfig.Service.Port}
	conf.Webhooks[0].Rules[0].Resources = []string{"configmaps"}
	timeout := int32(1)
	conf.Webhooks[0].TimeoutSeconds = &timeout
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: "metallb-webhook-service"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.200.12", Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}}},
	}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metallb-system"}}, svc, conf} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	if err := ensureEndpoints(ctx, w.Client(), svc, hook.addr, "node-6"); err != nil {
		t.Fatal(err)
	}
	dryRunUntil(t, ctx, c, `failed calling webhook "ipaddresspoolvalidationwebhook.metallb.io": failed to call webhook: Post "https://metallb-webhook-service.metallb-system.svc:443/validate?timeout=1s": context deadline exceeded`)

	if err := ensureEndpoints(ctx, w.Client(), svc, hook.addr, "node-2"); err != nil {
		t.Fatal(err)
	}
	dryRunUntil(t, ctx, c, "")
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace("metallb-system")); err != nil || len(cms.Items) != 0 {
		t.Errorf("a dry run stored %d ConfigMaps (%v)", len(cms.Items), err)
	}
}

// dryRunUntil dry-run creates a ConfigMap until the error contains want
// ("" for none).
func dryRunUntil(t *testing.T, ctx context.Context, c client.Client, want string) {
	t.Helper()
	errorUntil(t, ctx, "dry-run create", func() error {
		return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: "pool"}}, client.DryRunAll)
	}, want)
}

// TestJoinedBefore: nodes that registered in the same second keep the
// order they registered in, whatever their names; IPAM claims blocks and
// the scheduler picks the last node by it.
func TestJoinedBefore(t *testing.T) {
	node := func(name, order string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annJoinOrder: order}}}
	}
	nodes := []corev1.Node{node("a", "3"), node("b", "10"), node("c", "2"), node("d", "2")}
	sort.Slice(nodes, func(i, j int) bool { return joinedBefore(&nodes[i], &nodes[j]) })
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name)
	}
	if strings.Join(got, ",") != "c,d,a,b" {
		t.Errorf("order %v, want c,d,a,b (by join order 2,2,3,10, then name)", got)
	}
}
