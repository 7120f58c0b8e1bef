// Package labtest holds what tests that start the Cluster API lab share.
package labtest

import (
	"os"
	"testing"

	"github.com/faultline-dev/faultline/providers/lab"
)

// RequireEnv makes a missing kube-apiserver or etcd a failure instead of a
// skip; CI's lab pass (hack/test.sh) sets it.
const RequireEnv = "FAULTLINE_REQUIRE_LAB"

// Require skips a test that starts the Cluster API lab under -short, under
// -race (upstream controllers race among themselves: KCP's etcd proxy
// SetWriteDeadline, client-go's SpdyRoundTripper; hack/test.sh runs these
// tests in a pass without it), or without kube-apiserver and etcd, which
// with RequireEnv set is a failure.
func Require(t testing.TB) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip("lab integration test skipped under -short")
	case raceEnabled:
		t.Skip("lab integration test skipped under -race: upstream controllers race among themselves; hack/test.sh runs it in a pass without -race")
	}
	if _, err := lab.FindAssets(""); err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("lab required: %v", err)
		}
		t.Skipf("lab skipped: %v", err)
	}
}
