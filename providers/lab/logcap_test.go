package lab

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// Asked for -v 10, a lab logs up to level 7 and no further: client-go
// logs request and response bodies (Secrets, keys) from level 8, through
// the loggers the lab hands its controllers, names and values added.
func TestLabLogsNoBodies(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	log := withoutBodies(funcr.New(func(prefix, args string) { out.WriteString(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 10}))
	log = log.WithName("controllers").WithValues("controller", "kubeadmconfig")
	log.V(7).Info("Request Headers")
	log.V(8).Info("Response Body", "body", "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=")
	log.V(9).Info("curl -v -XGET")
	if got := out.String(); !strings.Contains(got, "Request Headers") || strings.Contains(got, "Body") || strings.Contains(got, "curl") {
		t.Errorf("logged:\n%s\nwant level 7 and nothing past it", got)
	}
	if log.V(8).Enabled() {
		t.Error("level 8 is enabled")
	}
}
