package lab

import (
	"os"
	"testing"
)

// TestMain lets the labs these tests start run their kube-apiserver and
// etcd through this test binary (RunShim).
func TestMain(m *testing.M) {
	RunShim()
	os.Exit(m.Run())
}
