package check

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/faultline-dev/faultline/providers"
)

// SystemNamespaces are the namespaces node bring-up creates pods in: the
// CNI's and the platform's (seed 000's list for vSphere Kubernetes
// Service, with Calico's and Antrea's own).
var SystemNamespaces = []string{
	"kube-system", "calico-system", "tigera-operator", "vmware-system-antrea", "vmware-system-auth",
	"vmware-system-cloud-provider", "vmware-system-csi", "tkg-system", "secretgen-controller",
	"vmware-system-supervisor-services",
}

// knownThirdParty are the webhook sources seed 000 names as known to
// block upgrades, matched against configuration and webhook names.
var knownThirdParty = []string{"rancher", "gatekeeper", "k8tz", "kyverno", "dynatrace", "linkerd"}

// AdmissionState is what the webhook check reads of a workload cluster.
type AdmissionState struct {
	// Validating and Mutating are the webhook configurations; Namespaces,
	// Services and Endpoints what their selectors and services resolve
	// to; each as the API serves it.
	Validating, Mutating, Namespaces, Services, Endpoints []map[string]any
}

// ReadAdmissionState reads the webhook configurations of the workload
// cluster of scope and what they refer to.
func ReadAdmissionState(ctx context.Context, o providers.Objects, scope providers.Object) (AdmissionState, error) {
	var s AdmissionState
	for _, l := range []struct {
		apiVersion, kind string
		into             *[]map[string]any
	}{
		{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", &s.Validating},
		{"admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", &s.Mutating},
		{"v1", "Namespace", &s.Namespaces},
		{"v1", "Service", &s.Services},
		{"v1", "Endpoints", &s.Endpoints},
	} {
		var err error
		if *l.into, err = o.ListObjects(ctx, scope, providers.ObjectRef{Cluster: "workload", APIVersion: l.apiVersion, Kind: l.kind}); err != nil {
			return s, err
		}
	}
	return s, nil
}

// CheckWebhooks finds seed 000's hazard: webhooks with failurePolicy Fail
// that see the creation of pods (or of the DaemonSets and Deployments that
// make them) in the namespaces node bring-up needs. An error when the
// webhook's service has no ready endpoint (every new node's CNI pod will be
// refused), a warning otherwise (it refuses them the day it is down or
// denies them). The fix is seed 000's runbook, with this cluster's names.
func CheckWebhooks(s AdmissionState) []Finding {
	nsLabels := map[string]map[string]string{}
	for _, ns := range s.Namespaces {
		nsLabels[str(ns, "metadata", "name")] = stringMap(field(ns, "metadata", "labels"))
	}
	var out []Finding
	for _, set := range []struct {
		kind, resource string
		confs          []map[string]any
	}{
		{"ValidatingWebhookConfiguration", "validatingwebhookconfiguration", s.Validating},
		{"MutatingWebhookConfiguration", "mutatingwebhookconfiguration", s.Mutating},
	} {
		for _, conf := range set.confs {
			name := str(conf, "metadata", "name")
			hooks, _ := field(conf, "webhooks").([]any)
			for _, h := range hooks {
				hook, _ := h.(map[string]any)
				if f, ok := webhookFinding(set.kind, set.resource, name, hook, nsLabels, s); ok {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

func webhookFinding(kind, resource, conf string, hook map[string]any, nsLabels map[string]map[string]string, s AdmissionState) (Finding, bool) {
	name := str(hook, "name")
	if policy := str(hook, "failurePolicy"); policy != "" && policy != "Fail" {
		return Finding{}, false
	}
	matched := matchedKinds(hook)
	if len(matched) == 0 {
		return Finding{}, false
	}
	sel, err := metav1.LabelSelectorAsSelector(labelSelector(field(hook, "namespaceSelector")))
	if err != nil {
		return Finding{}, false
	}
	var hit []string
	for _, ns := range SystemNamespaces {
		l, ok := nsLabels[ns]
		if !ok {
			l = map[string]string{}
		}
		if _, set := l["kubernetes.io/metadata.name"]; !set {
			l = mergeLabels(l, map[string]string{"kubernetes.io/metadata.name": ns})
		}
		if sel.Matches(labels.Set(l)) {
			hit = append(hit, ns)
		}
	}
	if len(hit) == 0 {
		return Finding{}, false
	}
	f := Finding{
		ID: "webhook-blocks-node-bringup", Severity: "warning",
		Objects: []string{kind + "/" + conf},
		Message: fmt.Sprintf("%s %s: webhook %s (failurePolicy Fail) sees the creation of %s in %s",
			kind, conf, name, strings.Join(matched, ", "), strings.Join(hit, ", ")),
	}
	if objSel := labelSelector(field(hook, "objectSelector")); objSel != nil && (len(objSel.MatchLabels) > 0 || len(objSel.MatchExpressions) > 0) {
		f.Message += " (for objects its objectSelector matches)"
	}
	if svcNS, svcName := str(hook, "clientConfig", "service", "namespace"), str(hook, "clientConfig", "service", "name"); svcName != "" {
		f.Objects = append(f.Objects, "Service/"+svcNS+"/"+svcName)
		switch ready, nodes := readyAddresses(s.Endpoints, svcNS, svcName); {
		case ready == 0:
			f.Severity = "error"
			f.Message += fmt.Sprintf("; its service %s/%s has no ready endpoint, so every new node's CNI pod will be refused and the node stay NotReady (seed 000)", svcNS, svcName)
		case ready == 1:
			f.Message += fmt.Sprintf("; its service %s/%s has one ready endpoint: losing that pod or its node blocks node bring-up", svcNS, svcName)
		case len(nodes) == 1 && nodes[0] != "":
			f.Message += fmt.Sprintf("; all %d ready endpoints of its service %s/%s run on node %s: losing that node blocks node bring-up", ready, svcNS, svcName, nodes[0])
		}
	}
	for _, src := range knownThirdParty {
		if strings.Contains(strings.ToLower(conf+" "+name), src) {
			f.Message += fmt.Sprintf("; %s is a source seed 000 names as known to block upgrades", src)
			break
		}
	}
	f.Fix = fmt.Sprintf("exclude the system namespaces with a namespaceSelector, or follow seed 000's runbook: "+
		"kubectl get %[1]s %[2]s -o yaml > %[2]s-backup.yaml; kubectl delete %[1]s %[2]s; "+
		"wait for the CNI pods (kubectl get pods -A -o wide | egrep 'antrea|calico') and the nodes to be Ready; "+
		"kubectl apply -f %[2]s-backup.yaml", resource, conf)
	return f, true
}

// matchedKinds are the pod-making kinds a webhook's rules see created.
func matchedKinds(hook map[string]any) []string {
	want := map[string]string{"pods": "", "daemonsets": "apps", "deployments": "apps", "replicasets": "apps"}
	seen := map[string]bool{}
	rules, _ := field(hook, "rules").([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		if !containsAny(stringList(rule["operations"]), "CREATE", "*") {
			continue
		}
		groups, resources := stringList(rule["apiGroups"]), stringList(rule["resources"])
		for res, group := range want {
			if containsAny(groups, group, "*") && containsAny(resources, res, "*", "*/*") {
				seen[res] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for res := range seen {
		out = append(out, res)
	}
	sort.Strings(out)
	return out
}

// readyAddresses counts a Service's ready endpoint addresses, and names
// the nodes they run on (empty where an address names none).
func readyAddresses(endpoints []map[string]any, namespace, name string) (int, []string) {
	for _, ep := range endpoints {
		if str(ep, "metadata", "namespace") != namespace || str(ep, "metadata", "name") != name {
			continue
		}
		n := 0
		nodes := map[string]bool{}
		subsets, _ := field(ep, "subsets").([]any)
		for _, sub := range subsets {
			if m, ok := sub.(map[string]any); ok {
				addrs, _ := m["addresses"].([]any)
				n += len(addrs)
				for _, a := range addrs {
					am, _ := a.(map[string]any)
					nodes[str(am, "nodeName")] = true
				}
			}
		}
		out := make([]string, 0, len(nodes))
		for node := range nodes {
			out = append(out, node)
		}
		sort.Strings(out)
		return n, out
	}
	return 0, nil
}

// labelSelector decodes a selector as the API serves it; nil selects
// everything.
func labelSelector(v any) *metav1.LabelSelector {
	m, ok := v.(map[string]any)
	if !ok {
		return &metav1.LabelSelector{}
	}
	sel := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, sel); err != nil {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "invalid", Operator: "invalid"}}}
	}
	return sel
}

func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}

func containsAny(list []string, want ...string) bool {
	for _, s := range list {
		for _, w := range want {
			if s == w {
				return true
			}
		}
	}
	return false
}

func mergeLabels(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
