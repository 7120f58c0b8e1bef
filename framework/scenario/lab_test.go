package scenario_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

func TestLabSpecValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec scenario.LabSpec
		want string // substring of the error; "" for none
	}{
		{name: "smallest", spec: scenario.LabSpec{ControlPlanes: 1}},
		{name: "even control planes", spec: scenario.LabSpec{ControlPlanes: 2},
			want: "spec.lab.controlPlanes: Invalid value: 2: got 2, expected an odd number of at least 1"},
		{name: "unknown nodes", spec: scenario.LabSpec{ControlPlanes: 1, Nodes: "vms"},
			want: `spec.lab.nodes: Invalid value: "vms": got "vms", expected simulated or containers`},
		{name: "simulated only, simulated", spec: scenario.LabSpec{ControlPlanes: 1, SimulatedOnly: "Calico is simulated"}},
		{name: "simulated only on real nodes", spec: scenario.LabSpec{ControlPlanes: 1, Nodes: scenario.NodesContainers, SimulatedOnly: "Calico is simulated"},
			want: "spec.lab.nodes: Invalid value: \"containers\": got containers, but spec.lab.simulatedOnly says the scenario cannot run on real nodes: Calico is simulated"},
		{name: "HA with its restart", spec: scenario.LabSpec{ControlPlanes: 1, HA: labconfig.LabHA{Enabled: true, RestartAfter: labconfig.D(10 * time.Second)}}},
		{name: "HA restart without HA", spec: scenario.LabSpec{ControlPlanes: 1, HA: labconfig.LabHA{RestartAfter: labconfig.D(10 * time.Second)}},
			want: `spec.lab.ha.restartAfter: Invalid value: "10s": got 10s, expected a positive duration with ha.enabled: true`},
		{name: "control planes spread", spec: scenario.LabSpec{ControlPlanes: 3, Placement: labconfig.LabPlacement{ControlPlanes: labconfig.PlacementSpread}}},
		{name: "unknown placement", spec: scenario.LabSpec{ControlPlanes: 3, Placement: labconfig.LabPlacement{ControlPlanes: "apart"}},
			want: `spec.lab.placement.controlPlanes: Invalid value: "apart": got "apart", expected any, spread or together`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.spec.Validate(field.NewPath("spec", "lab")).ToAggregate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate: %v\nwant it to contain: %s", err, tt.want)
			}
		})
	}
}

// TestParseLabRelease: spec.lab.release names a stack, by name or by both
// versions; an unknown one is placed at its line and lists the stacks.
func TestParseLabRelease(t *testing.T) {
	t.Parallel()
	other := scenario.Stacks()[1]
	parse := func(release string) (*scenario.Scenario, error) {
		src := strings.Replace(valid, "spec:\n", "spec:\n  lab:\n    controlPlanes: 1\n    release: "+release+"\n", 1)
		return scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
	}
	for _, release := range []string{other.Name, "{clusterAPI: " + other.ClusterAPI + ", capv: " + other.CAPV + "}"} {
		s, err := parse(release)
		if err != nil {
			t.Fatalf("release %s: %v", release, err)
		}
		if got, err := s.Spec.Lab.Release.Resolve(); err != nil || got != other {
			t.Errorf("release %s: resolves to %v, %v", release, got, err)
		}
	}
	_, err := parse("v1.9")
	if err == nil || !strings.Contains(err.Error(), "t.yaml:8") || !strings.Contains(err.Error(), "spec.lab.release") || !strings.Contains(err.Error(), other.String()) {
		t.Errorf("unknown release: %v", err)
	}
}
