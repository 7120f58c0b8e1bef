package session

import (
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
)

// Adjustments are what a run changes in a loaded scenario before the
// engine sees it; the zero value of each field changes nothing.
type Adjustments struct {
	// Timeout replaces spec.timeout (a run's --timeout, or what is left
	// of it after the set-up).
	Timeout time.Duration
	// Scope keeps every target inside this Cluster, namespace/name (a
	// run's --cluster, or the lab cluster a pool gave the scenario).
	Scope string
	// Nodes replaces spec.lab.nodes (a run's --nodes, a suite's
	// lab.nodes).
	Nodes string
	// Release replaces spec.lab.release (a run's --release, a suite's
	// E2E_RELEASE).
	Release lab.Release
}

// Adjust applies a to sc: the one place a run changes a scenario. An
// error names the field that cannot take the adjustment.
func Adjust(sc *scenario.Scenario, a Adjustments) error {
	if a.Timeout < 0 || a.Timeout > scenario.MaxDuration {
		return fmt.Errorf("timeout %s: expected a positive duration up to %s", a.Timeout, scenario.MaxDuration)
	}
	if a.Timeout > 0 {
		sc.Spec.Timeout = scenario.D(a.Timeout)
	}
	switch a.Nodes {
	case "":
	case scenario.NodesSimulated, scenario.NodesContainers:
		if sc.Spec.Lab != nil {
			l := *sc.Spec.Lab
			l.Nodes = a.Nodes
			sc.Spec.Lab = &l
		}
	default:
		return fmt.Errorf("nodes %q: expected %s or %s", a.Nodes, scenario.NodesSimulated, scenario.NodesContainers)
	}
	if !a.Release.IsZero() {
		if _, err := a.Release.Resolve(); err != nil {
			return fmt.Errorf("release %w", err)
		}
		if sc.Spec.Lab != nil {
			l := *sc.Spec.Lab
			l.Release = a.Release
			sc.Spec.Lab = &l
		}
	}
	if a.Scope != "" {
		return sc.ScopeTo(a.Scope)
	}
	return nil
}
