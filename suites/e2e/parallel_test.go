package e2e

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/scenarios/selection"
)

// TestLeasable: under ginkgo -p, the scenarios a leased cluster of the
// served lab runs are told apart from those that must be Serial, as the
// suite's config adjusts them.
func TestLeasable(t *testing.T) {
	for _, tc := range []struct {
		scenario, nodes string
		serialBecause   string // "" runs served
	}{
		{"power-off-worker", "", ""},
		{"delete-worker-vm", "", ""},
		{"upgrade-management-during-remediation", "", "upgrades the management plane"},
		{"remove-apiserver-pods", "", "own-cluster"},
		{"power-off-worker", "containers", "nodes are real"},
	} {
		sc, err := selection.Catalogue(tc.scenario).Load(nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &Config{Provider: "lab", Lab: LabConfig{Nodes: tc.nodes}}
		why := cfg.leasable(sc)
		switch {
		case tc.serialBecause == "" && why != "":
			t.Errorf("%s (nodes %q): Serial because %q, want it served", tc.scenario, tc.nodes, why)
		case tc.serialBecause != "" && !strings.Contains(why, tc.serialBecause):
			t.Errorf("%s (nodes %q): %q, want Serial because %s", tc.scenario, tc.nodes, why, tc.serialBecause)
		}
		if e := (&Environment{Config: cfg, served: "/run/x"}); e.runsServed(sc, "v1.12") {
			t.Errorf("%s on another release than the served lab's runs served", tc.scenario)
		}
	}
}
