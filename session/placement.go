package session

import (
	"fmt"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab"
)

// LabelAlone is the label by which a scenario says it must run alone: a
// run of several (run --parallel) runs it after the others, never beside
// them, as it does a scenario no leased cluster serves.
const LabelAlone = "alone"

// Where is where a scenario of a run of several runs.
type Where string

const (
	// Leased: on a fresh cluster leased from the warm lab, beside other
	// scenarios.
	Leased Where = "leased"
	// OwnLab: on a lab of its own, started beside the leased ones; it
	// shares nothing with the warm lab but the machine (its management
	// plane, vCenter simulator and journal are its own, on any release).
	OwnLab Where = "own-lab"
	// Alone: after the others, one at a time (the warm lab's first
	// cluster, a fresh one, or a lab of its own).
	Alone Where = "alone"
	// Skipped: not run; its result says why, as its run would.
	Skipped Where = "skipped"
	// Pod: in a pod of its own, with a lab of its own, on a cluster that
	// runs it as a Kubernetes Job.
	Pod Where = "pod"
)

// Placement is where a scenario runs and why, for people ("" when it is
// leased: where any scenario would run).
type Placement struct {
	Where Where
	Why   string
}

// Place is where sc runs in a run of several on provider. A scenario
// labelled for another provider is skipped, as is one the lab would skip
// (LabSkips); elsewhere than on the lab, each runs alone.
func Place(sc *scenario.Scenario, provider string) Placement {
	if want := sc.Metadata.Labels["provider"]; want != "" && want != provider {
		return Placement{Skipped, "it runs on provider " + want}
	}
	if provider != ProviderLab {
		return Placement{Alone, "provider " + provider + " has one cluster"}
	}
	if why := LabSkips(sc); why != "" {
		return Placement{Skipped, why}
	}
	if sc.Metadata.Labels[LabelAlone] == "true" {
		return Placement{Alone, "it is labelled " + LabelAlone + `: "true"`}
	}
	why := freshClusterRefused(sc)
	switch {
	case why == "":
		return Placement{Leased, ""}
	case len(LabClusters(sc)) > 0 && sc.Spec.Lab.RealNodes():
		// A lab brings real nodes up for one cluster at a time, and
		// they are not started beside other labs.
		return Placement{Alone, why}
	}
	if unbuilt := unbuilt(sc); unbuilt != "" {
		return Placement{Alone, unbuilt}
	}
	return Placement{OwnLab, why}
}

// unbuilt says why sc's lab cannot start beside other runs yet, "" when
// it can: its stack's managers are not built, and their build (minutes on
// two cores) would share the machine with the runs beside it and outlast
// its set-up deadline. Run alone, the build has the machine to itself.
func unbuilt(sc *scenario.Scenario) string {
	if sc.Spec.Lab == nil {
		return ""
	}
	stack, err := sc.Spec.Lab.Release.Resolve()
	if err != nil {
		return ""
	}
	if built, err := lab.StackBuilt(stack); err == nil && !built {
		return fmt.Sprintf("its stack %s is not built yet, and its build would share the machine with the runs beside it", stack.Name)
	}
	return ""
}

// LabSkips is why the lab would skip sc as its engine does, the reason
// its result gives, when sc runs on simulated nodes and requires what they
// lack (workloads: the simulated tier runs no pods); "" when it would run
// it. It is known before a lab or cluster is started for sc.
func LabSkips(sc *scenario.Scenario) string {
	if len(LabClusters(sc)) == 0 || sc.Spec.Lab.RealNodes() {
		return ""
	}
	for _, c := range sc.Requirements() {
		if err := lab.SimulatedUnavailable(c); err != nil {
			return providers.Lacks(ProviderLab, c, err).Error()
		}
	}
	return ""
}

// freshClusterRefused says why a fresh simulated cluster of a warm lab
// cannot serve sc, "" when it can.
func freshClusterRefused(sc *scenario.Scenario) string {
	l := sc.Spec.Lab
	switch {
	case len(LabClusters(sc)) == 0:
		return "it has no spec.lab (a vCenter simulator alone)"
	case sc.OwnCluster():
		return "it is labelled " + scenario.LabelOwnCluster
	case UpgradesManagement(sc):
		return "it upgrades the management plane every cluster of a lab shares"
	case l.RealNodes():
		return "its nodes are real, and a lab runs real nodes for one cluster"
	}
	return ""
}
