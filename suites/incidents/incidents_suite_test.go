// Package incidents reproduces each seed incident: one spec per scenario
// that reproduces one (label incident), labelled with its seed
// (GINKGO_LABEL_FILTER=seed-003).
package incidents

import (
	"testing"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/suites/e2e"
)

var suite = e2e.NewSuite("incidents")

var _ = e2e.DescribeScenarios(suite, func(sc *scenario.Scenario) bool { return sc.Metadata.Labels["incident"] == "true" })

func TestIncidents(t *testing.T) {
	e2e.RunSuite(t, "faultline incidents")
}
