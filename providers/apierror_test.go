package providers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/faultline-dev/faultline/providers"
)

func TestAPIErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("etcdserver: no leader"), "etcdserver: no leader"},
		{fmt.Errorf("list nodes: %w", context.DeadlineExceeded), "list nodes: context deadline exceeded (timed out)"},
		{errors.New(`Get "https://x/api": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`), `Get "https://x/api": net/http: request canceled (Client.Timeout exceeded while awaiting headers) (timed out)`},
	} {
		if got := providers.APIErrorText(tc.err); got != tc.want {
			t.Errorf("APIErrorText(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
