package nightly

import (
	"testing"

	. "github.com/onsi/ginkgo/v2" //nolint:revive
	. "github.com/onsi/gomega"    //nolint:revive

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/suites/e2e"
)

var suite = e2e.NewSuite("nightly")

var _ = e2e.DescribeScenarios(suite, func(*scenario.Scenario) bool { return true })

func TestNightly(t *testing.T) {
	RegisterFailHandler(Fail)
	e2e.RunSuite(t, "faultline nightly")
}
