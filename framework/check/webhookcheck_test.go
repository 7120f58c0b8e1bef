package check

import (
	"strings"
	"testing"
)

func webhookConf(name, failurePolicy string, resources []any, nsSelector map[string]any) map[string]any {
	hook := map[string]any{
		"name":         "validate." + name,
		"clientConfig": map[string]any{"service": map[string]any{"namespace": "policy-system", "name": "policy-webhook"}},
		"rules":        []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": resources}},
	}
	if failurePolicy != "" {
		hook["failurePolicy"] = failurePolicy
	}
	if nsSelector != nil {
		hook["namespaceSelector"] = nsSelector
	}
	return map[string]any{"metadata": map[string]any{"name": name}, "webhooks": []any{hook}}
}

func endpoints(addrs int) map[string]any {
	return endpointsOn(make([]string, addrs)...)
}

// endpointsOn is the webhook service's Endpoints with one ready address on
// each node named ("" names none).
func endpointsOn(nodes ...string) map[string]any {
	var list []any
	for _, n := range nodes {
		a := map[string]any{"ip": "10.0.0.1"}
		if n != "" {
			a["nodeName"] = n
		}
		list = append(list, a)
	}
	return map[string]any{"metadata": map[string]any{"namespace": "policy-system", "name": "policy-webhook"}, "subsets": []any{map[string]any{"addresses": list}}}
}

// TestCheckWebhooks: seed 000's webhook (Fail, all pods, no endpoint) is an
// error naming the runbook; healthy, a warning; one that ignores failures,
// excludes the system namespaces or sees no pods is not reported.
func TestCheckWebhooks(t *testing.T) {
	exclude := map[string]any{"matchExpressions": []any{map[string]any{
		"key": "kubernetes.io/metadata.name", "operator": "NotIn",
		"values": []any{"kube-system", "calico-system", "tigera-operator", "vmware-system-antrea", "vmware-system-auth",
			"vmware-system-cloud-provider", "vmware-system-csi", "tkg-system", "secretgen-controller", "vmware-system-supervisor-services"},
	}}}
	for _, tc := range []struct {
		name     string
		state    AdmissionState
		severity string
		message  []string
	}{
		{"seed 000: no endpoint", AdmissionState{Validating: []map[string]any{webhookConf("gatekeeper-validating", "", []any{"pods"}, nil)}},
			"error", []string{
				"ValidatingWebhookConfiguration gatekeeper-validating: webhook validate.gatekeeper-validating (failurePolicy Fail) sees the creation of pods in kube-system, calico-system",
				"its service policy-system/policy-webhook has no ready endpoint",
				"gatekeeper is a source seed 000 names",
			}},
		{"one endpoint", AdmissionState{Mutating: []map[string]any{webhookConf("policy", "Fail", []any{"*"}, nil)}, Endpoints: []map[string]any{endpoints(1)}},
			"warning", []string{"MutatingWebhookConfiguration policy", "sees the creation of pods", "has one ready endpoint"}},
		{"healthy", AdmissionState{Validating: []map[string]any{webhookConf("policy", "Fail", []any{"pods"}, nil)}, Endpoints: []map[string]any{endpoints(2)}},
			"warning", []string{"sees the creation of pods"}},
		{"all on one node", AdmissionState{Validating: []map[string]any{webhookConf("policy", "Fail", []any{"pods"}, nil)}, Endpoints: []map[string]any{endpointsOn("w1", "w1")}},
			"warning", []string{"all 2 ready endpoints of its service policy-system/policy-webhook run on node w1"}},
		{"spread", AdmissionState{Validating: []map[string]any{webhookConf("policy", "Fail", []any{"pods"}, nil)}, Endpoints: []map[string]any{endpointsOn("w1", "w2")}},
			"warning", []string{"sees the creation of pods in kube-system"}},
		{"ignores failures", AdmissionState{Validating: []map[string]any{webhookConf("policy", "Ignore", []any{"pods"}, nil)}}, "", nil},
		{"excludes system namespaces", AdmissionState{Validating: []map[string]any{webhookConf("policy", "Fail", []any{"pods"}, exclude)}}, "", nil},
		{"sees no pods", AdmissionState{Validating: []map[string]any{webhookConf("policy", "Fail", []any{"configmaps"}, nil)}}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckWebhooks(tc.state)
			if tc.severity == "" {
				if len(got) != 0 {
					t.Fatalf("want no finding, got %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].ID != "webhook-blocks-node-bringup" || got[0].Severity != tc.severity {
				t.Fatalf("want one %s finding, got %+v", tc.severity, got)
			}
			for _, m := range tc.message {
				if !strings.Contains(got[0].Message, m) {
					t.Errorf("message %q lacks %q", got[0].Message, m)
				}
			}
			if tc.name == "spread" && strings.Contains(got[0].Message, "run on node") {
				t.Errorf("endpoints on two nodes: %q", got[0].Message)
			}
			if !strings.Contains(got[0].Fix, "kubectl get ") || !strings.Contains(got[0].Fix, "-backup.yaml") {
				t.Errorf("fix %q lacks the runbook", got[0].Fix)
			}
		})
	}
}
