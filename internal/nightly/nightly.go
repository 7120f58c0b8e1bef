package nightly

import (
	"os"
	"testing"
)

// Env set (to anything) runs the nightly part too; hack/test-nightly.sh
// sets it.
const Env = "FAULTLINE_NIGHTLY"

// Enabled tells whether this is the nightly run.
func Enabled() bool { return os.Getenv(Env) != "" }

// Only skips t, saying where it runs, unless this is the nightly run.
func Only(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skipf("nightly part of this tier: make test-nightly runs it (%s=1); make test runs the representative part", Env)
	}
}
