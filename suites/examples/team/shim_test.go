package resilience

import (
	"os"
	"testing"

	"github.com/faultline-dev/faultline/providers/lab"
)

// TestMain lets the labs these tests start run their kube-apiserver and
// etcd through this test binary (lab.RunShim).
func TestMain(m *testing.M) {
	lab.RunShim()
	os.Exit(m.Run())
}
