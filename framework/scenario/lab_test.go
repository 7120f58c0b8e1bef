package scenario_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/faultline-dev/faultline/framework/scenario"
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
