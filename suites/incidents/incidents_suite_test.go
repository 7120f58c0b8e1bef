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
