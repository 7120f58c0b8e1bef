package engine

import (
	"maps"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// RunInfo says what ran where, so that a result identifies its run and
// tells how to run it again. The engine fills what the scenario and the
// targets say; the caller (faultline run) adds faultline's version, the
// host, where it pointed the run, and the replay command.
type RunInfo struct {
	// Faultline is faultline's version; Host the machine it ran on.
	Faultline string `json:"faultline,omitempty"`
	Host      string `json:"host,omitempty"`
	// Description is the scenario's metadata.description.
	Description string `json:"description,omitempty"`
	// Where is what the run was pointed at: the lab, the kind cluster,
	// the kubeconfig context and vCenter.
	Where string `json:"where,omitempty"`
	// Clusters are the Clusters (namespace/name) of the targets' objects.
	Clusters []string `json:"clusters,omitempty"`
	// Sets are the --set values the scenario ran with.
	Sets map[string]string `json:"sets,omitempty"`
	// Seed is the seed of the run's random target picks, when it made
	// any: --seed with it picks the same objects again.
	Seed *int64 `json:"seed,omitempty"`
	// ScenarioFile is the scenario file as it was read, copied into the
	// run folder.
	ScenarioFile string `json:"scenarioFile,omitempty"`
	// Replay is the command that runs the scenario again as it ran.
	Replay string `json:"replay,omitempty"`
	// DryRun: nothing was injected.
	DryRun bool `json:"dryRun,omitempty"`
}

func newRunInfo(in RunInput) *RunInfo {
	ri := &RunInfo{Description: in.Scenario.Metadata.Description, Sets: in.Parameters, DryRun: in.DryRun}
	if d, ok := in.Provider.(providers.Describer); ok {
		// What recover would reach again; a ProviderRef holds no secret.
		ref := d.Ref()
		ri.Where = strings.TrimSpace(ref.Name + " " + ref.Target)
		if c := ref.Config["context"]; c != "" {
			ri.Where += " (context " + c + ")"
		}
	}
	return ri
}

// addClusters records the Clusters of objs.
func (ri *RunInfo) addClusters(objs []providers.Object) {
	seen := map[string]bool{}
	for _, c := range ri.Clusters {
		seen[c] = true
	}
	for _, o := range objs {
		c := o.Attributes[providers.AttrCluster]
		if c == "" {
			continue
		}
		if ns := o.Attributes[providers.AttrNamespace]; ns != "" {
			c = ns + "/" + c
		}
		seen[c] = true
	}
	ri.Clusters = slices.Sorted(maps.Keys(seen))
}
