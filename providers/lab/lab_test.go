package lab_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// startLab starts a lab with one cluster, or skips when the envtest
// binaries are missing (unless FAULTLINE_REQUIRE_LAB is set, as in CI).
func startLab(t *testing.T, spec lab.ClusterSpec) *lab.Lab {
	t.Helper()
	labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p, err := lab.ProfileNamed(lab.DefaultProfile)
	if err != nil {
		t.Fatal(err)
	}
	log := logr.Discard()
	if os.Getenv("LAB_DEBUG") != "" {
		log = funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
	}
	start := time.Now()
	l, err := lab.Start(ctx, lab.Input{Profile: p, Clusters: []lab.ClusterSpec{spec}, Log: log})
	if err != nil {
		t.Fatalf("start lab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Stop(context.Background()); err != nil {
			t.Errorf("stop lab: %v", err)
		}
	})
	if err := l.WaitReady(ctx); err != nil {
		t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("lab ready in %s", time.Since(start).Round(time.Millisecond))
	return l
}
