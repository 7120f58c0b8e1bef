package kind_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/scenarios/scenariotest"
)

// readEvery is how often the test reads the Service's EndpointSlices
// itself: its own record of the gap, finer than the workload's 200ms.
const readEvery = 25 * time.Millisecond

// endpointRecord is the test's own reading of a Service's ready endpoints
// over time: each change of "has one or more".
type endpointRecord struct {
	mu      sync.Mutex
	changes []endpointChange
	// slowest is the longest the API server took to answer one of the
	// test's readings.
	slowest time.Duration
}

type endpointChange struct {
	at time.Time
	up bool
}

// record reads the Service's EndpointSlices every readEvery until ctx
// ends. A failed read records nothing.
func (r *endpointRecord) record(ctx context.Context, c client.Client, namespace, service string) {
	t := time.NewTicker(readEvery)
	defer t.Stop()
	for {
		at := time.Now()
		var slices discoveryv1.EndpointSliceList
		if err := c.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err == nil {
			up := false
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					up = up || (e.Conditions.Ready != nil && *e.Conditions.Ready)
				}
			}
			r.mu.Lock()
			r.slowest = max(r.slowest, time.Since(at))
			if n := len(r.changes); (n == 0 && up) || (n > 0 && r.changes[n-1].up != up) {
				r.changes = append(r.changes, endpointChange{at: at, up: up})
			}
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// apiLatency is the least time the test allows the API server to answer a
// reading of EndpointSlices, the measure's or the test's; the slowest of
// the test's own readings when that took longer. A quiet machine answers
// in 0-48ms; under CI's load (a lab's tests beside this cluster) one took
// 420ms.
const apiLatency = 500 * time.Millisecond

// proxyLag is how long after the endpoint is back requests may still
// fail: each node's kube-proxy writes the Service's rules on its own,
// within a second or more of a change (minSyncPeriod), later under load.
const proxyLag = 10 * time.Second

// slowestRead is the longest the API server took to answer a reading.
func (r *endpointRecord) slowestRead() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.slowest
}

// firstGap is the first time the Service had no ready endpoint after it
// had one, and the time it had one again.
func (r *endpointRecord) firstGap() (down, up time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.changes) < 3 {
		return time.Time{}, time.Time{}, false
	}
	return r.changes[1].at, r.changes[2].at, true
}

// testWorkloadKnownGap scales a running workload to zero for a known time
// (testdata/workload-known-gap.yaml) and checks that each measure counts
// that gap, where the test's own reading of the EndpointSlices saw it, and
// no other.
func testWorkloadKnownGap(ctx context.Context, t *testing.T, p *kind.Provider) {
	data, err := os.ReadFile("testdata/workload-known-gap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var rec endpointRecord
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec.record(rctx, p.Client(), scenario.DefaultWorkloadNamespace, "gap")
	}()
	res := scenariotest.RunText(ctx, t, p, "testdata/workload-known-gap.yaml", data, nil)
	stop()
	<-done
	if res.Verdict != engine.Pass {
		t.Fatalf("%s: %s", res.Verdict, res.Reason)
	}
	down, up, ok := rec.firstGap()
	if !ok {
		t.Fatalf("the test's own reading saw no gap: %+v", rec.changes)
	}
	t.Logf("the test read no ready endpoint from %s to %s (%s)", down.Format("15:04:05.000"), up.Format("15:04:05.000"), up.Sub(down).Round(time.Millisecond))
	if len(res.Workloads) != 1 {
		t.Fatalf("workloads in the result: %d, want 1", len(res.Workloads))
	}
	interval := 200 * time.Millisecond
	// A sample is dated when its read starts, and what it reads is the API
	// server's state when it answers: either reading may see a change up
	// to the API server's latency before the other.
	latency := max(apiLatency, rec.slowestRead())
	earlyBy := readEvery + latency
	t.Logf("the slowest answer to the test's readings took %s; measures may see a change %s before the test", rec.slowestRead(), earlyBy)
	endpoints := res.Workloads[0].Measure(scenario.MeasureEndpoints)
	checkOneGap(t, endpoints, down, up, earlyBy, interval+earlyBy)
	// Requests fail once the pods stop serving, GRACE after the scale to
	// zero, or once a node's kube-proxy has written the Service's rules
	// with no endpoint, and succeed again once it has written the new one.
	// The requests enter at every node in turn: they may fail in several
	// gaps, but only between the scale to zero and proxyLag after the
	// endpoint came back. The known gap closes before requests-back is
	// reached; a later one may still be open when the run ends (a node
	// whose kube-proxy had not written the new endpoint yet refused a
	// request 1.3 s after requests-back, and the run ended 0.7 s later).
	requests := res.Workloads[0].Measure(scenario.MeasureRequests)
	checkGapsWithin(t, requests, injectedAt(t, res, "scale-to-zero"), up.Add(proxyLag), reachedAt(t, res, "requests-back"))
}

// reachedAt is when the run saw phase name hold.
func reachedAt(t *testing.T, res *engine.Result, name string) time.Time {
	t.Helper()
	for _, p := range res.Phases {
		if p.Name == name && p.ObservedAt != nil {
			return *p.ObservedAt
		}
	}
	t.Fatalf("phase %s not reached in the result: %+v", name, res.Phases)
	return time.Time{}
}

// injectedAt is when the fault of that step was first injected (its
// faults are STEP/OBJECT, one per object).
func injectedAt(t *testing.T, res *engine.Result, step string) time.Time {
	t.Helper()
	for _, f := range res.Faults {
		if strings.HasPrefix(f.ID, step+"/") && f.InjectedAt != nil {
			return *f.InjectedAt
		}
	}
	t.Fatalf("no injected fault %s in the result: %+v", step, res.Faults)
	return time.Time{}
}

// checkGapsWithin fails t unless m has one or more gaps, all between from
// and until, and closed unless they began after openAfter.
func checkGapsWithin(t *testing.T, m *engine.MeasureResult, from, until, openAfter time.Time) {
	t.Helper()
	if m == nil {
		t.Fatal("measure missing from the result")
	}
	t.Logf("%s: %d samples, %d failed, gaps %+v", m.Of, m.Samples, m.Failed, m.Gaps)
	if len(m.Gaps) == 0 {
		t.Fatalf("%s: no gap, want the known one", m.Of)
	}
	for _, g := range m.Gaps {
		end := g.Start.Add(g.Duration.Duration)
		if (g.Open && !g.Start.After(openAfter)) || g.Start.Before(from) || end.After(until) {
			t.Errorf("%s: a gap from %s to %s (open %t), outside the known one and its slack (%s to %s)", m.Of,
				g.Start.Format("15:04:05.000"), end.Format("15:04:05.000"), g.Open, from.Format("15:04:05.000"), until.Format("15:04:05.000"))
		}
	}
}

// checkOneGap fails t unless m has exactly one gap, starting and ending at
// down and up, at most early before them or late after them.
func checkOneGap(t *testing.T, m *engine.MeasureResult, down, up time.Time, early, late time.Duration) {
	t.Helper()
	if m == nil {
		t.Fatal("measure missing from the result")
	}
	t.Logf("%s: %d samples, %d failed, gaps %+v", m.Of, m.Samples, m.Failed, m.Gaps)
	if len(m.Gaps) != 1 {
		t.Fatalf("%s: %d gaps, want exactly the known one", m.Of, len(m.Gaps))
	}
	g := m.Gaps[0]
	end := g.Start.Add(g.Duration.Duration)
	if g.Start.Before(down.Add(-early)) || g.Start.After(down.Add(late)) {
		t.Errorf("%s: gap starts at %s, %s after the test saw no endpoint; want within [-%s, %s]", m.Of, g.Start.Format("15:04:05.000"), g.Start.Sub(down), early, late)
	}
	if end.Before(up.Add(-early)) || end.After(up.Add(late)) {
		t.Errorf("%s: gap ends at %s, %s after the test saw an endpoint again; want within [-%s, %s]", m.Of, end.Format("15:04:05.000"), end.Sub(up), early, late)
	}
	if g.Open {
		t.Errorf("%s: gap still open when the watch ended", m.Of)
	}
}
