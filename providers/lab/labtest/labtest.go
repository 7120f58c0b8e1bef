package labtest

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

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
	case RaceEnabled:
		t.Skip("lab integration test skipped under -race: upstream controllers race among themselves; hack/test.sh runs it in a pass without -race")
	}
	if _, err := lab.FindAssets(""); err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("lab required: %v", err)
		}
		t.Skipf("lab skipped: %v", err)
	}
}

// Start starts a lab of the clusters for the test (after Require) and
// waits for their Machines; the lab stops when the test ends. LAB_DEBUG
// set logs the lab's controllers to the test.
func Start(t *testing.T, specs ...lab.ClusterSpec) *lab.Lab {
	t.Helper()
	return StartInput(t, lab.Input{Clusters: specs})
}

// StartInput is Start with in's other fields; its Profile, when unset, is
// the default one, and its Log the test's under LAB_DEBUG.
func StartInput(t *testing.T, in lab.Input) *lab.Lab {
	t.Helper()
	Require(t)
	for _, c := range in.Clusters {
		buildStack(t, c.Release)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if in.Profile.Name == "" {
		p, err := lab.ProfileNamed(lab.DefaultProfile)
		if err != nil {
			t.Fatal(err)
		}
		in.Profile = p
	}
	log := logr.Discard()
	if os.Getenv("LAB_DEBUG") != "" {
		log = funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
	}
	start := time.Now()
	lab.RouteLibraryLogs(log)
	// As faultline's lab commands do: CAPV then makes one TLS handshake
	// per connection to vcsim, not two. The first test's cleanup removes
	// the CA's folder; crypto/x509 has read it by then, once per process.
	untrust, err := lab.TrustLabCertificates()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := untrust(); err != nil {
			t.Error(err)
		}
	})
	in.Log = log
	l, err := lab.Start(ctx, in)
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

// APIServer starts a bare kube-apiserver and etcd (envtest, with the
// lab's binaries) for the test, after Require, and stops them when it
// ends.
func APIServer(t *testing.T) *envtest.Environment {
	t.Helper()
	Require(t)
	assets, err := lab.FindAssets("")
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env
}

// buildStack builds the managers of the stack release names, unless it is
// the compiled one or built, as a run does on first use: minutes, once
// per machine; another process's build of it (CI builds the stacks beside
// the tests) is waited for.
func buildStack(t *testing.T, release lab.Release) {
	t.Helper()
	stack, err := release.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if stack.Compiled {
		return
	}
	if built, err := lab.StackBuilt(stack); err != nil || built {
		return // a stack not as built is refused by the start, naming why
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	started := time.Now()
	if _, err := lab.BuildStack(ctx, stack, io.Discard); err != nil {
		t.Fatalf("build stack %s: %v", stack.Name, err)
	}
	t.Logf("stack %s built (or its build waited for) in %s", stack.Name, time.Since(started).Round(time.Second))
}

// Main is TestMain of a test package that starts labs: the lab's
// kube-apiserver and etcd run through the test binary (lab.RunShim), then
// the tests.
func Main(m *testing.M) {
	lab.RunShim()
	os.Exit(m.Run())
}
