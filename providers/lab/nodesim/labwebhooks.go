package nodesim

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"net"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// How a scenario asks the lab to play a third-party policy engine, which
// on a real cluster is the engine itself:
const (
	// LabelPolicyWebhook on a Service makes the lab serve a policy webhook
	// behind it (value: the policy, PolicyDenyOutsideNamespace) and keep
	// its Endpoints ready, as the engine's running pods would.
	LabelPolicyWebhook = "lab.faultline.dev/policy-webhook"
	// PolicyDenyOutsideNamespace denies every pod outside the Service's
	// namespace (seed 000, scenario 2).
	PolicyDenyOutsideNamespace = "deny-outside-namespace"
	// PolicyAllowAll allows every request, as MetalLB's webhook does good
	// objects (seed 001): what matters there is whether it can be reached.
	PolicyAllowAll = "allow-all"
	// AnnotationInjectCA on a webhook configuration names the Service
	// (namespace/name) whose webhook's CA the lab writes into every
	// caBundle, as cert-manager's CA injector does.
	AnnotationInjectCA = "lab.faultline.dev/inject-ca-from-service"
)

// reconcilePolicyWebhooks serves a webhook for every Service that asks for
// one, keeps its Endpoints, injects CAs, and stops the webhooks whose
// Service is gone.
func (s *Sim) reconcilePolicyWebhooks(ctx context.Context, cluster string) error {
	w := s.workload(cluster)
	if w == nil || !w.CanStore() {
		return nil
	}
	c := w.Client()
	var svcs corev1.ServiceList
	if err := workloadapi.ListInto(ctx, c, &svcs, client.HasLabels{LabelPolicyWebhook}); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, svc := range svcs.Items {
		key := cluster + "/" + svc.Namespace + "/" + svc.Name
		want[key] = true
		policy := svc.Labels[LabelPolicyWebhook]
		if policy != PolicyDenyOutsideNamespace && policy != PolicyAllowAll {
			return fmt.Errorf("service %s/%s: label %s=%q, expected %s or %s", svc.Namespace, svc.Name, LabelPolicyWebhook, policy, PolicyDenyOutsideNamespace, PolicyAllowAll)
		}
		hook := s.webhooks[key]
		if hook == nil {
			var err error
			if hook, err = startPolicyWebhook(svc.Namespace, svc.Name, policy == PolicyDenyOutsideNamespace); err != nil {
				return err
			}
			s.webhooks[key] = hook
			s.log.V(1).Info("policy webhook serving", "service", svc.Namespace+"/"+svc.Name, "address", hook.addr)
		}
		node, err := scheduleWorker(ctx, c, hook.node)
		if err != nil {
			return err
		}
		hook.node = node
		if err := ensureEndpoints(ctx, c, &svc, hook.addr, hook.node); err != nil {
			return err
		}
		if err := injectCA(ctx, c, svc.Namespace+"/"+svc.Name, hook.caPEM); err != nil {
			return err
		}
	}
	for key, hook := range s.webhooks {
		rest, ok := strings.CutPrefix(key, cluster+"/")
		if want[key] || !ok {
			continue
		}
		// The Service is gone: so are the engine's pods and Endpoints.
		delete(s.webhooks, key)
		if err := hook.close(); err != nil {
			return fmt.Errorf("stop the policy webhook of %s: %w", rest, err)
		}
		ns, name, _ := strings.Cut(rest, "/")
		eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := c.Delete(ctx, eps); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s: %w", rest, err)
		}
	}
	return nil
}

// scheduleWorker is where the engine's pod runs: it stays on current
// while that is a Ready worker; otherwise it is (re)created where
// kube-scheduler's least-allocated scoring puts it, on the emptiest node,
// which in the lab (every node runs the same pods) is the Ready worker
// that joined last (annJoinOrder); "" when there is none yet.
func scheduleWorker(ctx context.Context, c inmemoryclient.Client, current string) (string, error) {
	var nodes corev1.NodeList
	if err := workloadapi.ListInto(ctx, c, &nodes); err != nil {
		return "", err
	}
	var best *corev1.Node
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; cp || !nodeReady(n) {
			continue
		}
		if n.Name == current {
			return current, nil
		}
		if best == nil || joinedBefore(best, n) {
			best = n
		}
	}
	if best == nil {
		return "", nil
	}
	return best.Name, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ensureEndpoints points the Service at the webhook's loopback address,
// as the pod on node.
func ensureEndpoints(ctx context.Context, c inmemoryclient.Client, svc *corev1.Service, addr, node string) error {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return err
	}
	var name string
	if len(svc.Spec.Ports) > 0 {
		name = svc.Spec.Ports[0].Name
	}
	ep := corev1.EndpointAddress{IP: host}
	if node != "" {
		ep.NodeName = &node
	}
	want := []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{ep}, Ports: []corev1.EndpointPort{{Name: name, Port: int32(port)}}}}
	var eps corev1.Endpoints
	err = workloadapi.GetInto(ctx, c, client.ObjectKeyFromObject(svc), &eps)
	switch {
	case apierrors.IsNotFound(err):
		return c.Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}, Subsets: want})
	case err != nil:
		return err
	case len(eps.Subsets) == 1 && len(eps.Subsets[0].Addresses) == 1 && eps.Subsets[0].Addresses[0].IP == host &&
		ptr.Deref(eps.Subsets[0].Addresses[0].NodeName, "") == node &&
		len(eps.Subsets[0].Ports) == 1 && eps.Subsets[0].Ports[0].Port == int32(port):
		return nil
	}
	eps.Subsets = want
	return c.Update(ctx, &eps)
}

// injectCA writes caPEM into every webhook of the configurations that ask
// for the Service's CA and do not have it yet.
func injectCA(ctx context.Context, c inmemoryclient.Client, service string, caPEM []byte) error {
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind(kind + "List"))
		if err := c.List(ctx, list); err != nil {
			return fmt.Errorf("list %s: %w", kind, err)
		}
		for i := range list.Items {
			u := list.Items[i].DeepCopy()
			if u.GetAnnotations()[AnnotationInjectCA] != service {
				continue
			}
			changed := false
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				hook, ok := h.(map[string]any)
				if !ok {
					continue
				}
				cc, _ := hook["clientConfig"].(map[string]any)
				if cc == nil {
					cc = map[string]any{}
					hook["clientConfig"] = cc
				}
				// caBundle is base64 in JSON, as []byte fields are.
				want := base64.StdEncoding.EncodeToString(caPEM)
				if got, _ := cc["caBundle"].(string); got != want {
					cc["caBundle"] = want
					changed = true
				}
			}
			if !changed {
				continue
			}
			if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
				return err
			}
			u.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind(kind))
			if err := c.Update(ctx, u); err != nil {
				return fmt.Errorf("inject CA into %s %s: %w", kind, u.GetName(), err)
			}
		}
	}
	return nil
}
