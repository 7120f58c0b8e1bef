package providers

import (
	"context"
	"errors"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TimedOut is what APIErrorText adds to an error that is a timeout.
const TimedOut = "(timed out)"

// APIErrorText is an API server's failure in words a scenario can match:
// the error's text, and TimedOut when the request timed out rather than
// being answered with an error: the client gave up waiting, or the server
// did (a 504 "unable to return a response in the time allotted"). A real
// kube-apiserver that has lost etcd's quorum keeps the request waiting on
// etcd and answers either way; the lab's answers at once with etcd's
// "etcdserver: no leader".
func APIErrorText(err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) || strings.Contains(err.Error(), "Client.Timeout exceeded") ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return err.Error() + " " + TimedOut
	}
	return err.Error()
}
