package providers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
		// What a real kube-apiserver answers when etcd did not in time.
		{apierrors.NewGenericServerResponse(http.StatusGatewayTimeout, "get", schema.GroupResource{Resource: "nodes"}, "", "", 0, true),
			"the server was unable to return a response in the time allotted, but may still be processing the request (get nodes) (timed out)"},
		{errors.New(`Get "https://x/api": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`), `Get "https://x/api": net/http: request canceled (Client.Timeout exceeded while awaiting headers) (timed out)`},
	} {
		if got := providers.APIErrorText(tc.err); got != tc.want {
			t.Errorf("APIErrorText(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
