// Package resilience is an example of a team's own suite in its own Go
// module: faultline's Ginkgo suite machinery (suites/e2e) over the team's
// scenario files (scenarios/, named in e2e.yaml), with faultline's
// catalogue left out. Run it as CI does:
//
//	FAULTLINE_E2E=1 E2E_CONFIG=$PWD/e2e.yaml go test ./...
package resilience

import (
	"testing"

	. "github.com/onsi/ginkgo/v2" //nolint:revive
	. "github.com/onsi/gomega"    //nolint:revive

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/suites/e2e"
)

var suite = e2e.NewSuite("payments")

var _ = e2e.DescribeScenarios(suite, func(sc *scenario.Scenario) bool {
	return sc.Metadata.Labels["team"] == "payments"
})

func TestPaymentsResilience(t *testing.T) {
	RegisterFailHandler(Fail)
	e2e.RunSuite(t, "payments resilience")
}
