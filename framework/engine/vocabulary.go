package engine

import "github.com/faultline-dev/faultline/framework/scenario"

// Vocabulary is every fault and probe a scenario may name, as the scenario
// language checks them: pass it to scenario.Load and scenario.Parse.
var Vocabulary = scenario.Vocabulary{Faults: faultWords(), Probes: probeWords()}

func faultWords() map[string]scenario.Word {
	out := make(map[string]scenario.Word, len(faultCatalogue))
	for k, d := range faultCatalogue {
		out[k] = scenario.Word{Capability: d.capability, Args: d.params, Summary: d.summary, Check: d.check, TakesEtcd: d.takesEtcd, Standalone: d.standalone, Untargeted: d.once}
	}
	return out
}

func probeWords() map[string]scenario.Word {
	out := make(map[string]scenario.Word, len(probeCatalogue))
	for k, d := range probeCatalogue {
		out[k] = scenario.Word{Capability: d.capability, Args: d.args, Summary: d.summary, Check: d.check}
	}
	return out
}
