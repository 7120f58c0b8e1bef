package lab_test

import (
	"testing"

	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// startLab starts a lab with one cluster, or skips when the envtest
// binaries are missing (unless FAULTLINE_REQUIRE_LAB is set, as in CI).
func startLab(t *testing.T, spec lab.ClusterSpec) *lab.Lab { return labtest.Start(t, spec) }
