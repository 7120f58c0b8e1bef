package incidents

import (
	"testing"

	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestMain runs the labs' kube-apiserver and etcd through this binary.
func TestMain(m *testing.M) { labtest.Main(m) }
