package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

const objectScenario = `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  requires: [Objects]
  pollInterval: 50ms
  timeout: 10s
  targets:
    - name: victim
      select: {vm: vm-a}
  steps:
    - name: see
      observe:
        phases:
          - name: p
            when: {probe: %PROBE%, target: victim, args: {%ARGS%}}
            within: 300ms
`

var kcpRef = providers.ObjectRef{Cluster: "management", APIVersion: "controlplane.cluster.x-k8s.io/v1beta2", Kind: "KubeadmControlPlane", Namespace: "default", Name: "cp"}

const kcpArgs = "apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlane, namespace: default, name: cp"

func kcp(ready int64, avail string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "cp", "creationTimestamp": "2026-11-23T10:00:00Z"},
		"status": map[string]any{
			"readyReplicas": ready,
			"conditions": []any{
				map[string]any{"type": "Available", "status": avail, "reason": "Whatever", "lastTransitionTime": "2026-11-23T10:01:00Z"},
			},
		},
	}
}

// checkProbePhase runs objectScenario with probe and args on p and checks
// whether its phase is reached and, when not, that its message says detail.
func checkProbePhase(t *testing.T, p *fake.Provider, probe, args string, reached bool, detail string) {
	t.Helper()
	src := strings.Replace(strings.Replace(objectScenario, "%PROBE%", probe, 1), "%ARGS%", args, 1)
	sc, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := run(t, context.Background(), sc, p)
	ph := res.Phases[0]
	if ph.OK != reached {
		t.Fatalf("reached %t, want %t (%s; %s)", ph.OK, reached, ph.Message, res.Reason)
	}
	if !reached && !strings.Contains(ph.Message, detail) {
		t.Errorf("message %q lacks %q", ph.Message, detail)
	}
}

func TestObjectProbes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, probe, args string
		obj               map[string]any
		reached           bool
		detail            string
	}{
		{"present", "object-present", kcpArgs, kcp(3, "True"), true, "KubeadmControlPlane default/cp (management cluster) present [creationTimestamp 2026-11-23T10:00:00Z]"},
		{"present but absent", "object-present", kcpArgs, nil, false, "absent"},
		{"absent", "object-absent", kcpArgs, nil, true, ""},
		{"condition true", "object-condition", kcpArgs + ", type: Available", kcp(3, "True"), true, "Available=True reason Whatever [lastTransitionTime 2026-11-23T10:01:00Z]"},
		{"condition false", "object-condition", kcpArgs + ", type: Available", kcp(3, "False"), false, "Available=False"},
		{"condition wants false", "object-condition", kcpArgs + ", type: Available, status: \"False\"", kcp(3, "False"), true, ""},
		{"condition missing", "object-condition", kcpArgs + ", type: Ready", kcp(3, "True"), false, "no condition Ready"},
		{"expression true", "object-expression", kcpArgs + ", expression: \"object.status.readyReplicas == 3\"", kcp(3, "True"), true, "is true"},
		{"expression false", "object-expression", kcpArgs + ", expression: \"object.status.readyReplicas == 3\"", kcp(2, "True"), false, "is false"},
		{"expression on a missing field", "object-expression", kcpArgs + ", expression: \"object.spec.replicas == 3\"", kcp(3, "True"), false, "no such key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := fake.New("vm-a")
			p.SetObject(kcpRef, tc.obj)
			checkProbePhase(t, p, tc.probe, tc.args, tc.reached, tc.detail)
		})
	}
}

// of: bootstrapConfig reads the KubeadmConfig a Machine's configRef
// names, in CABPK's v1beta2: a join configuration that lacks its
// controlPlane, as CABPK left it after cluster-api #14167's failed write.
func TestObjectProbeOfBootstrapConfig(t *testing.T) {
	t.Parallel()
	const lacks = "of: bootstrapConfig, expression: \"!has(object.spec.joinConfiguration) || !has(object.spec.joinConfiguration.controlPlane)\""
	ref := providers.ObjectRef{Cluster: "management", APIVersion: "bootstrap.cluster.x-k8s.io/v1beta2", Kind: "KubeadmConfig", Namespace: "default", Name: "cp-x2f9k"}
	for _, tc := range []struct {
		name    string
		join    map[string]any
		reached bool
	}{
		{"written", map[string]any{"controlPlane": map[string]any{}}, false},
		{"not written", map[string]any{"discovery": map[string]any{}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := fake.New("vm-a")
			p.SetAttributes("vm-a", map[providers.Attribute]string{providers.AttrNamespace: "default", providers.AttrBootstrapConfig: "bootstrap.cluster.x-k8s.io/KubeadmConfig/cp-x2f9k"})
			p.SetObject(ref, map[string]any{"metadata": map[string]any{"name": "cp-x2f9k"}, "spec": map[string]any{"joinConfiguration": tc.join}})
			checkProbePhase(t, p, "object-expression", lacks, tc.reached, "is false")
		})
	}
}

func TestObjectProbeValidation(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, probe, args, want string }{
		{"missing kind", "object-present", "apiVersion: v1, name: x", "t.yaml:16:59: spec.steps[0].observe.phases[0].when.args.kind: required"},
		{"bad cluster", "object-present", "apiVersion: v1, kind: Node, name: x, cluster: other", `args.cluster: got "other", expected management or workload`},
		{"condition without type", "object-condition", "apiVersion: v1, kind: Node, name: x", "args.type: required"},
		{"bad status", "object-condition", "apiVersion: v1, kind: Node, name: x, type: Ready, status: yes", `args.status: got "yes"`},
		{"expression does not compile", "object-expression", "apiVersion: v1, kind: Node, name: x, expression: \"object.status ==\"", "args.expression: does not compile"},
		{"expression not bool", "object-expression", "apiVersion: v1, kind: Node, name: x, expression: \"1 + 2\"", "args.expression: does not compile: yields int, expected a bool"},
		{"unknown arg", "object-present", "apiVersion: v1, kind: Node, name: x, colour: red", `unknown parameter "colour"`},
		{"of unknown", "object-present", "of: pod", `args.of: got "pod", expected one of bootstrapConfig, cluster, controlPlane, machine, machineDeployment, node`},
		{"of with a name", "object-condition", "of: node, name: x, type: Ready", "args.name: of names the object already; leave name out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(strings.Replace(objectScenario, "%PROBE%", tc.probe, 1), "%ARGS%", tc.args, 1)
			_, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEventProbe(t *testing.T) {
	t.Parallel()
	refused := map[string]any{
		"reason": "FailedCreate", "message": `Error creating: Internal error occurred: failed calling webhook "validate.policy.example.com": failed to call webhook: Post "https://policy-webhook.policy-system.svc:443/validate?timeout=10s": dial tcp 10.96.200.10:443: connect: connection refused`,
		"involvedObject": map[string]any{"kind": "DaemonSet", "name": "calico-node"}, "count": int64(3),
		"lastTimestamp": time.Now().Add(time.Minute).UTC().Format(time.RFC3339),
	}
	// Recorded long before the run: never its evidence.
	other := map[string]any{"reason": "Scheduled", "message": "assigned", "involvedObject": map[string]any{"kind": "Pod", "name": "x"}, "lastTimestamp": "2020-01-01T00:00:00Z"}
	tests := []struct {
		name, args string
		reached    bool
		detail     string
	}{
		{"reason and message", `namespace: kube-system, reason: FailedCreate, message: "connect: connection refused"`, true, ""},
		{"involved object", `namespace: kube-system, message: failed calling webhook, involvedKind: DaemonSet, involvedName: calico-node`, true, ""},
		{"other reason", `namespace: kube-system, reason: FailedMount, message: failed calling webhook`, false, "no matching Event among 1 (1 older than the run ignored)"},
		{"older than the run", `namespace: kube-system, reason: Scheduled, message: assigned`, false, "no matching Event among 1 (1 older than the run ignored)"},
		{"other namespace", `namespace: default, message: failed calling webhook`, false, "no matching Event among 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := fake.New("vm-a")
			p.SetObject(providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Event", Namespace: "kube-system", Name: "a"}, refused)
			p.SetObject(providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Event", Namespace: "kube-system", Name: "b"}, other)
			checkProbePhase(t, p, "event", tc.args, tc.reached, tc.detail)
		})
	}
}
