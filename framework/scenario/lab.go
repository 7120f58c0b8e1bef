package scenario

import (
	"slices"
	"time"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// The lab owns the shape of its clusters (labconfig); a scenario's
// spec.lab is that shape, and its durations are the lab's Duration.
type (
	LabSpec        = labconfig.LabSpec
	LabRemediation = labconfig.LabRemediation
	LabTriggerIf   = labconfig.LabTriggerIf
	LabNetwork     = labconfig.LabNetwork
	Duration       = labconfig.Duration
	Release        = labconfig.Release
)

// The CNIs a lab cluster can run, and what its VMs are.
const (
	CNICalico       = labconfig.CNICalico
	CNIAntrea       = labconfig.CNIAntrea
	NodesSimulated  = labconfig.NodesSimulated
	NodesContainers = labconfig.NodesContainers
)

// D returns a Duration of d.
func D(d time.Duration) Duration { return labconfig.D(d) }

// Stacks are the Cluster API and CAPV stacks spec.lab.release can name
// (labconfig.Stacks).
func Stacks() []labconfig.Stack { return labconfig.Stacks }

// Requirements are the capabilities the scenario needs: spec.requires,
// and SimulatedNodes when spec.lab.simulatedOnly says it cannot run on
// real nodes.
func (s *Scenario) Requirements() []providers.Capability {
	out := slices.Clone(s.Spec.Requires)
	if l := s.Spec.Lab; l != nil && l.SimulatedOnly != "" && !slices.Contains(out, providers.CapSimulatedNodes) {
		out = append(out, providers.CapSimulatedNodes)
	}
	return out
}
