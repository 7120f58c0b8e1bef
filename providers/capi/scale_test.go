package capi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/scenarios/scenariotest"
)

// scaleScenario scales the management cluster's object kind/name to zero,
// then runs steps.
func scaleScenario(kind, name, steps string) string {
	return `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  requires: [ClusterAPI, Objects, ObjectWrites]
  pollInterval: 50ms
  timeout: 20s
  targets:
    - name: scope
      select: {role: worker}
  steps:
    - name: scale-down
      inject:
        fault: object.scale
        params: {cluster: management, apiVersion: cluster.x-k8s.io/v1beta2, kind: ` + kind + `, namespace: ns, name: ` + name + `, replicas: "0"}
` + steps
}

// object.scale sets a MachineDeployment's replicas to zero, a phase sees
// it, and the undo sets them back to the count its backup file holds.
func TestObjectScaleRoundTrip(t *testing.T) {
	t.Parallel()
	mdObj := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1-md-0"},
		Spec:       clusterv1.MachineDeploymentSpec{ClusterName: "c1", Replicas: ptr.To[int32](3)},
	}
	p := newProvider(t, machine("w-1", md, "Running"), mdObj)
	src := scaleScenario("MachineDeployment", "c1-md-0", `    - name: scaled
      observe:
        phases:
          - name: zero
            when:
              probe: object-expression
              target: scope
              args: {cluster: management, apiVersion: cluster.x-k8s.io/v1beta2, kind: MachineDeployment, namespace: ns, name: c1-md-0, expression: "object.spec.replicas == 0"}
            within: 5s
`)
	sc, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j, err := engine.OpenJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	res, err := engine.Run(ctx, engine.RunInput{Scenario: sc, Provider: p, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Reason)
	}
	got := &clusterv1.MachineDeployment{}
	if err := p.Client().Get(ctx, client.ObjectKey{Namespace: "ns", Name: "c1-md-0"}, got); err != nil || got.Spec.Replicas == nil || *got.Spec.Replicas != 3 {
		t.Fatalf("replicas after the undo: %v (%v), want 3", got.Spec.Replicas, err)
	}
	backup, err := os.ReadFile(filepath.Join(dir, "backups", "scale-down", "machinedeployment-ns-c1-md-0.yaml"))
	if err != nil || !strings.Contains(string(backup), "replicas: 3") {
		t.Fatalf("backup file: %s (%v)", backup, err)
	}
}

// A fault that names an object without replicas fails, naming the object,
// and changes nothing.
func TestObjectScaleNothingToScale(t *testing.T) {
	t.Parallel()
	p := newProvider(t, machine("w-1", md, "Running"))
	src := scaleScenario("Machine", "w-1", "")
	res := scenariotest.RunText(context.Background(), t, p, "t.yaml", []byte(src), nil)
	if res.Verdict != engine.Error || !strings.Contains(res.Reason, "Machine ns/w-1 (management cluster): no spec.replicas to scale") {
		t.Fatalf("verdict %s (%s), want an error naming the Machine", res.Verdict, res.Reason)
	}
}

// Bad params of object.scale are found when the file loads, each named.
func TestObjectScaleValidation(t *testing.T) {
	t.Parallel()
	tests := []struct{ params, want string }{
		{`apiVersion: apps/v1, kind: Deployment, name: web, replicas: "-1"`, `params.replicas: got "-1", expected a whole number of replicas, 0 or more`},
		{`apiVersion: apps/v1, kind: Deployment, name: web, replicas: two`, `params.replicas: got "two"`},
		{`apiVersion: apps/v1, kind: Deployment, replicas: "0"`, `params.name: required`},
	}
	for _, tc := range tests {
		src := `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  targets:
    - name: scope
      select: {role: worker}
  steps:
    - name: scale-down
      inject:
        fault: object.scale
        target: scope
        params: {` + tc.params + `}
`
		_, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.params, err, tc.want)
		}
	}
}
