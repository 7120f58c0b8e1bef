package preupgrade

import (
	"testing"

	. "github.com/onsi/ginkgo/v2" //nolint:revive
	. "github.com/onsi/gomega"    //nolint:revive

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/suites/e2e"
)

var suite = e2e.NewSuite("preupgrade")

// With upgrade.to (E2E_UPGRADE_TO) the suite is the upgrade gate, checks
// first: both releases, the upgrade under a fault, the scorecard.
var _ = e2e.DescribeUpgradeGate(suite, preupgrade) || describeChecksAndScenarios()

func describeChecksAndScenarios() bool {
	Describe("faultline check", Ordered, Label("checks"), func() {
		e2e.ChecksSpec(func() e2e.ChecksSpecInput { return e2e.ChecksSpecInput{Environment: suite.Environment} })
	})
	return e2e.DescribeScenarios(suite, preupgrade)
}

func preupgrade(sc *scenario.Scenario) bool { return sc.Metadata.Labels["preupgrade"] == "true" }

func TestPreUpgrade(t *testing.T) {
	RegisterFailHandler(Fail)
	e2e.RunSuite(t, "faultline pre-upgrade")
}
