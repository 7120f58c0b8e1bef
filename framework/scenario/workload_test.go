package scenario_test

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
)

// withWorkload is valid with a workload, a phase on it and a disruption
// assertion.
var withWorkload = strings.NewReplacer(
	"requires: [VMPower]", "requires: [VMPower, Workloads]",
	"  steps:\n", "  workloads:\n    - name: web\n      target: victim\n      replicas: 2\n  steps:\n",
	"    - name: check\n      assert:\n        within:\n          phase: vm-off\n          budget: 1m\n",
	"    - name: check\n      assert:\n        disruption:\n          workload: web\n          atMost: 10s\n    - name: gone\n      observe:\n        phases:\n          - name: web-down\n            when: {probe: workload-unavailable, target: victim, args: {workload: web, of: endpoints}}\n",
).Replace(valid)

func TestParseWorkload(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse("t.yaml", []byte(withWorkload), nil, engine.Vocabulary)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	w := s.WorkloadOf("web")
	if w == nil || w.ReplicasOrDefault() != 2 || w.NamespaceOrDefault() != scenario.DefaultWorkloadNamespace || w.IntervalOrDefault().Duration != scenario.DefaultSampleInterval {
		t.Fatalf("workload = %+v", w)
	}
	if d := s.Spec.Steps[2].Assert.Disruption; d == nil || d.AtMost.Duration.String() != "10s" || d.Longest != nil {
		t.Errorf("disruption = %+v", d)
	}
}

func TestWorkloadInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new, want string
	}{
		{"capability", "requires: [VMPower, Workloads]", "requires: [VMPower]", "spec.workloads: a workload needs capability Workloads; add it to spec.requires"},
		{"unknown target", "      target: victim\n      replicas", "      target: nobody\n      replicas", `spec.workloads[0].target: unknown target "nobody"`},
		{"replicas", "replicas: 2", "replicas: 99", "spec.workloads[0].replicas: 99 is out of range; expected 1 to 20"},
		{"spread", "replicas: 2", "replicas: 2\n      spread: always", `spec.workloads[0].spread: got "always", expected required or preferred`},
		{"budget both", "replicas: 2", "replicas: 2\n      disruptionBudget: {minAvailable: 1, maxUnavailable: 1}", "spec.workloads[0].disruptionBudget: set minAvailable or maxUnavailable, one of them"},
		{"budget over replicas", "replicas: 2", "replicas: 2\n      disruptionBudget: {minAvailable: 3}", "spec.workloads[0].disruptionBudget.minAvailable: 3 is out of range; expected 0 to the replicas, 2"},
		{"interval", "replicas: 2", "replicas: 2\n      interval: 10ms", "spec.workloads[0].interval: 10ms is shorter than the minimum 50ms"},
		{"assertion's workload", "workload: web\n          atMost", "workload: wev\n          atMost", `spec.steps[2].assert.disruption.workload: unknown workload "wev"; spec.workloads defines: web; did you mean "web"?`},
		{"assertion's bounds", "          atMost: 10s\n", "", "spec.steps[2].assert.disruption: required: atMost, longest or both"},
		{"probe's measure", "of: endpoints", "of: pings", `spec.steps[3].observe.phases[0].when.args.of: got "pings", expected requests or endpoints`},
		{"probe's workload", "args: {workload: web,", "args: {workload: api,", `spec.steps[3].observe.phases[0].when.args.workload: unknown workload "api"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(withWorkload, tt.old, tt.new, 1)
			if src == withWorkload {
				t.Fatal("test case does not change the scenario")
			}
			_, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tt.want)
			}
		})
	}
}
