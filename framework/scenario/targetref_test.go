package scenario_test

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"

	"github.com/faultline-dev/faultline/providers"
)

const targetRefScenario = `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  requires: [Objects, ObjectWrites, Nodes]
  targets:
    - name: victim
      select: {role: worker}
  steps:
    - name: pin
      inject:
        fault: object.apply
        target: victim
        params:
          manifest: |
            apiVersion: v1
            kind: Pod
            metadata: {name: p, namespace: default}
            spec: {nodeName: "${target.victim}", containers: [{name: c, image: i}]}
    - name: tainted
      observe:
        phases:
          - name: tainted
            when:
              probe: object-present
              target: victim
              args: {cluster: workload, apiVersion: v1, kind: Node, name: "${target.%s}"}
            within: 10s
`

// ${target.NAME} survives loading, is checked against spec.targets, and
// becomes the picked objects' names at run time.
func TestTargetRefs(t *testing.T) {
	sc, err := scenario.Parse("t.yaml", []byte(strings.Replace(targetRefScenario, "%s", "victim", 1)), nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	out := scenario.ExpandTargetRefs(sc, map[string][]providers.Object{"victim": {{Kind: "KindNode", Name: "w-2"}}})
	if got := out.Spec.Steps[1].Observe.Phases[0].When.Args["name"]; got != "w-2" {
		t.Fatalf("probe arg: %q, want w-2", got)
	}
	if got := out.Spec.Steps[0].Inject.Params["manifest"]; !strings.Contains(got, `nodeName: "w-2"`) {
		t.Fatalf("manifest: %s", got)
	}
	if got := sc.Spec.Steps[1].Observe.Phases[0].When.Args["name"]; got != "${target.victim}" {
		t.Fatalf("the loaded scenario changed: %q", got)
	}

	_, err = scenario.Parse("t.yaml", []byte(strings.Replace(targetRefScenario, "%s", "nobody", 1)), nil, engine.Vocabulary)
	if err == nil || !strings.Contains(err.Error(), `${target.nobody}: unknown target "nobody"`) || !strings.Contains(err.Error(), "args.name") {
		t.Fatalf("an unknown target: %v", err)
	}
}

// ${target.NAME.FIELD} is one fact of each picked object, said once when
// they share it; an unknown FIELD is a load error naming the fields.
func TestTargetRefFields(t *testing.T) {
	src := strings.Replace(targetRefScenario, "%s", "victim.node", 1)
	src = strings.Replace(src, "namespace: default}", "namespace: \"${target.victim.namespace}\"}", 1)
	sc, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	attrs := func(node string) map[providers.Attribute]string {
		return map[providers.Attribute]string{providers.AttrNode: node, providers.AttrNamespace: "team-a"}
	}
	out := scenario.ExpandTargetRefs(sc, map[string][]providers.Object{"victim": {
		{Kind: "Machine", Name: "md-0-a", Attributes: attrs("node-a")},
		{Kind: "Machine", Name: "md-0-b", Attributes: attrs("node-b")},
	}})
	if got := out.Spec.Steps[1].Observe.Phases[0].When.Args["name"]; got != "node-a,node-b" {
		t.Errorf("${target.victim.node}: %q, want node-a,node-b", got)
	}
	if got := out.Spec.Steps[0].Inject.Params["manifest"]; !strings.Contains(got, `namespace: "team-a"}`) {
		t.Errorf("${target.victim.namespace} in the manifest: %s", got)
	}
	_, err = scenario.Parse("t.yaml", []byte(strings.Replace(targetRefScenario, "%s", "victim.colour", 1)), nil, engine.Vocabulary)
	if err == nil || !strings.Contains(err.Error(), `${target.victim.colour}: unknown field "colour"; expected one of cluster, namespace, node, owner, providerID`) {
		t.Fatalf("an unknown field: %v", err)
	}
}
