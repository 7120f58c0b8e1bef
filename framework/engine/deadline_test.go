package engine

import (
	"errors"
	"testing"
)

// A reading cut short by its own deadline, in the client's rate limiter,
// says nothing about what it read.
func TestCutByDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  string
		want bool
	}{
		{"client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline", true},
		{"client rate limiter Wait returned an error: context deadline exceeded", true},
		{`Get "https://x/api": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`, false},
		{"etcdserver: no leader", false},
	} {
		if got := cutByDeadline(errors.New(tc.err)); got != tc.want {
			t.Errorf("cutByDeadline(%q) = %t, want %t", tc.err, got, tc.want)
		}
	}
}
