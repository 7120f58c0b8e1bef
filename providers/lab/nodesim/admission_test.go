package nodesim

import (
	"context"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi/workloadapitest"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func policyConfig(caBundle []byte) *admissionregv1.ValidatingWebhookConfiguration {
	fail, none := admissionregv1.Fail, admissionregv1.SideEffectClassNone
	port, path, timeout := int32(443), "/validate", int32(5)
	return &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-validating"},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name: "validate.policy.example.com",
			ClientConfig: admissionregv1.WebhookClientConfig{
				Service:  &admissionregv1.ServiceReference{Namespace: "policy-system", Name: "policy-webhook", Path: &path, Port: &port},
				CABundle: caBundle,
			},
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Create},
				Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: &timeout,
		}},
	}
}

// admitUntil calls admit until its error contains want (the informers take
// a moment to see a new configuration) or the deadline passes.
func admitUntil(t *testing.T, ctx context.Context, a *workloadapi.Admitter, pod *corev1.Pod, want string) {
	t.Helper()
	errorUntil(t, ctx, "admit", func() error { return a.Admit(ctx, pod, daemonSetController) }, want)
}

// errorUntil calls f until its error contains want ("" for no error) or
// 20s pass: the Admitter's informers take a moment to see changes.
func errorUntil(t *testing.T, ctx context.Context, what string, f func() error, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		err = f()
		if (want == "" && err == nil) || (want != "" && err != nil && strings.Contains(err.Error(), want)) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond): // poll interval of a bounded wait
		}
	}
	t.Fatalf("%s: %v, want %q", what, err, want)
}

// Seed 000 in the lab's admission: a webhook whose Service has no endpoint
// refuses the CNI pod with the seed's message; one whose endpoint serves a
// policy denying system namespaces refuses it with the policy's; without
// the configuration the pod is admitted.
func TestAdmissionWebhooks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, cfg, c := workloadapitest.Start(t, ctx, nil)
	refused, err := closedPort()
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	a, err := workloadapi.NewAdmitter(ctx, workloadapi.AdmitterInput{Config: cfg, Store: w.Client(), Scheme: s, Refused: refused, Routed: func(ctx context.Context, node string) (bool, error) { return nodeHasBlock(ctx, w.Client(), node) }})
	if err != nil {
		t.Fatal(err)
	}
	pod := cniPod("calico-node", "calico/node", "worker-1")
	admitUntil(t, ctx, a, pod, "")

	hook, err := startPolicyWebhook("policy-system", "policy-webhook", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hook.close(); err != nil {
			t.Error(err)
		}
	})
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policy-system"}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "policy-system", Name: "policy-webhook"},
			Spec:       corev1.ServiceSpec{ClusterIP: "10.96.200.10", Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}}},
		},
		policyConfig([]byte(hook.caPEM)),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	admitUntil(t, ctx, a, pod, `failed calling webhook "validate.policy.example.com": failed to call webhook: Post "https://policy-webhook.policy-system.svc:443/validate?timeout=5s": dial tcp 10.96.200.10:443: connect: connection refused`)

	_, port, _ := net.SplitHostPort(hook.addr)
	p, _ := strconv.Atoi(port)
	eps := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "policy-system", Name: "policy-webhook"},
		Subsets:    []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}}, Ports: []corev1.EndpointPort{{Port: int32(p)}}}},
	}
	if err := c.Create(ctx, eps); err != nil {
		t.Fatal(err)
	}
	admitUntil(t, ctx, a, pod, `admission webhook "validate.policy.example.com" denied the request: [allowed-namespaces] Pod kube-system/`)

	if err := c.Delete(ctx, policyConfig(nil)); err != nil {
		t.Fatal(err)
	}
	admitUntil(t, ctx, a, pod, "")
}
