package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// outageObjects plays a workload cluster's API for the monitor: one Node
// at 127.0.0.1, and the workload's EndpointSlice, whose one endpoint is
// ready unless down is set.
type outageObjects struct{ down *atomic.Bool }

func (o outageObjects) GetObject(context.Context, providers.Object, providers.ObjectRef) (map[string]any, error) {
	return nil, nil
}

func (o outageObjects) ListObjects(_ context.Context, _ providers.Object, ref providers.ObjectRef) ([]map[string]any, error) {
	switch ref.Kind {
	case "Node":
		return []map[string]any{{"metadata": map[string]any{"name": "n1"}, "status": map[string]any{"addresses": []any{
			map[string]any{"type": "InternalIP", "address": "127.0.0.1"}}}}}, nil
	case "EndpointSlice":
		return []map[string]any{{
			"metadata":  map[string]any{"name": "web-x", "labels": map[string]any{"kubernetes.io/service-name": "web"}},
			"endpoints": []any{map[string]any{"conditions": map[string]any{"ready": !o.down.Load()}}},
		}}, nil
	}
	return nil, nil
}

func portOf(t *testing.T, url string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(url[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond every 10 ms until it holds, or fails the test after
// d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		<-tick.C
	}
}

func counts(s *series) (good, bad int) {
	samples, _ := s.sorted()
	for _, sm := range samples {
		if sm.ok {
			good++
		} else {
			bad++
		}
	}
	return good, bad
}

// TestMonitorCountsAKnownGap takes a real server on 127.0.0.1 down for a
// known time: each measure counts exactly that one gap, starting and
// ending within one sampling interval of the outage, and none in the
// good samples before it.
func TestMonitorCountsAKnownGap(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			http.Error(w, "scaled to zero", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("pod web-1 on node n1\n"))
	}))
	defer app.Close()
	health := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer health.Close()

	const interval = 100 * time.Millisecond
	w := scenario.Workload{Name: "web", Target: "t", Interval: scenario.D(interval)}
	m := newMonitor(w, providers.Object{Kind: "Machine", Name: "m"}, outageObjects{&down}, netip.MustParsePrefix("127.0.0.0/8"), portOf(t, app.URL))
	m.healthPort = portOf(t, health.URL)
	m.start(context.Background())
	defer m.stop()

	for _, s := range []*series{&m.requests, &m.endpoints} {
		waitFor(t, 10*time.Second, "10 good samples", func() bool { g, _ := counts(s); return g >= 10 })
	}
	downAt := time.Now()
	down.Store(true)
	for _, s := range []*series{&m.requests, &m.endpoints} {
		waitFor(t, 10*time.Second, "5 failed samples", func() bool { _, b := counts(s); return b >= 5 })
	}
	upAt := time.Now()
	down.Store(false)
	for _, s := range []*series{&m.requests, &m.endpoints} {
		waitFor(t, 10*time.Second, "5 good samples after the outage", func() bool {
			samples, _ := s.sorted()
			n := 0
			for _, sm := range samples {
				if sm.ok && sm.at.After(upAt) {
					n++
				}
			}
			return n >= 5
		})
	}
	m.stop()

	for _, of := range []string{scenario.MeasureRequests, scenario.MeasureEndpoints} {
		// A sample is taken at most one interval after the change, or the
		// longest spacing of this run's samples when the ticker came late
		// (-race beside CI's other tests: 185ms for 100ms); a request taken
		// just before it may come back after it, hence 50ms more.
		slack := max(interval, longestSpacing(m.series(of))) + 50*time.Millisecond
		res := m.series(of).result(of, time.Now(), time.Time{})
		if len(res.Gaps) != 1 {
			t.Fatalf("%s: %d gaps, want exactly 1: %+v", of, len(res.Gaps), res.Gaps)
		}
		g := res.Gaps[0]
		if g.Start.Before(downAt) || g.Start.Sub(downAt) > slack {
			t.Errorf("%s: gap starts %s after the outage began, want within [0, %s]", of, g.Start.Sub(downAt), slack)
		}
		end := g.Start.Add(g.Duration.Duration)
		if end.Before(upAt) || end.Sub(upAt) > slack {
			t.Errorf("%s: gap ends %s after the outage ended, want within [0, %s]", of, end.Sub(upAt), slack)
		}
		if g.Open || g.Failed < 5 || res.Longest != g.Duration || res.Total != g.Duration {
			t.Errorf("%s: gap %+v, total %s, longest %s", of, g, res.Total, res.Longest)
		}
	}
	if got := m.served()["pod web-1 on node n1"]; got < 10 {
		t.Errorf("servedBy counted %d answers of web-1, want 10 or more", got)
	}
}

// longestSpacing is the longest time between two samples of s in a row.
func longestSpacing(s *series) time.Duration {
	samples, _ := s.sorted()
	var longest time.Duration
	for i := 1; i < len(samples); i++ {
		longest = max(longest, samples[i].at.Sub(samples[i-1].at))
	}
	return longest
}

func TestGaps(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cases := []struct {
		name    string
		samples []sample
		want    []Gap
	}{
		{"none", []sample{{at: at(0), ok: true, reason: ""}, {at: at(100), ok: true, reason: ""}}, nil},
		{"one closed", []sample{{at: at(0), ok: true, reason: ""}, {at: at(100), ok: false, reason: "refused"}, {at: at(200), ok: false, reason: "x"}, {at: at(300), ok: true, reason: ""}},
			[]Gap{{Start: at(100), End: at(300), Failed: 2, Reason: "refused"}}},
		{"open at the end", []sample{{at: at(0), ok: true, reason: ""}, {at: at(100), ok: false, reason: "timed out"}},
			[]Gap{{Start: at(100), End: at(500), Failed: 1, Reason: "timed out", Open: true}}},
		{"two", []sample{{at: at(0), ok: false, reason: "a"}, {at: at(100), ok: true, reason: ""}, {at: at(200), ok: false, reason: "b"}, {at: at(300), ok: true, reason: ""}},
			[]Gap{{Start: at(0), End: at(100), Failed: 1, Reason: "a"}, {Start: at(200), End: at(300), Failed: 1, Reason: "b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := gaps(tc.samples, at(500))
			if len(got) != len(tc.want) {
				t.Fatalf("gaps = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("gap %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestSeriesInTimeOrder: samples recorded out of order (a request that
// timed out comes back after later ones) are cut into gaps in the order
// they were taken.
func TestSeriesInTimeOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	var s series
	s.samples = append(s.samples,
		sample{at: t0.Add(200 * time.Millisecond), ok: true},
		sample{at: t0, ok: true},
		sample{at: t0.Add(100 * time.Millisecond), reason: "timed out"})
	res := s.result(scenario.MeasureRequests, t0.Add(time.Second), t0.Add(-time.Second))
	if len(res.Gaps) != 1 || res.Gaps[0].Duration.Duration != 100*time.Millisecond || res.Failed != 1 || res.Samples != 3 {
		t.Fatalf("result = %+v", res)
	}
	if res.Gaps[0].SinceInject == nil || res.Gaps[0].SinceInject.Duration != 1100*time.Millisecond {
		t.Errorf("sinceInject = %v, want 1.1s", res.Gaps[0].SinceInject)
	}
	down, since, _, known := s.state()
	if !known || down || !since.Equal(t0.Add(200*time.Millisecond)) {
		t.Errorf("state = %t since %s (known %t), want up since +200ms", down, since, known)
	}
}

// twoNodes is outageObjects with a second Node, 127.0.0.2, whose
// NodePort refuses connections.
type twoNodes struct{ outageObjects }

func (o twoNodes) ListObjects(ctx context.Context, scope providers.Object, ref providers.ObjectRef) ([]map[string]any, error) {
	list, err := o.outageObjects.ListObjects(ctx, scope, ref)
	if ref.Kind == "Node" {
		list = append(list, map[string]any{"metadata": map[string]any{"name": "n2"}, "status": map[string]any{"addresses": []any{
			map[string]any{"type": "InternalIP", "address": "127.0.0.2"}}}})
	}
	return list, err
}

// TestMonitorCountsRetries: a request refused through one node and
// answered through the other is a good sample, counted as retried.
func TestMonitorCountsRetries(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("pod web-1 on node n1\n")) }))
	defer app.Close()
	health := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer health.Close()
	// The second node's kube-proxy is healthy too: its health check
	// answers on 127.0.0.2 at the same port.
	second, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(portOf(t, health.URL))))
	if err != nil {
		t.Skipf("no second loopback address here: %v", err)
	}
	srv := &http.Server{Handler: health.Config.Handler, ReadHeaderTimeout: time.Second}
	go srv.Serve(second)
	defer srv.Close()

	var down atomic.Bool
	m := newMonitor(scenario.Workload{Name: "web", Interval: scenario.D(50 * time.Millisecond)}, providers.Object{}, twoNodes{outageObjects{&down}}, netip.MustParsePrefix("127.0.0.0/8"), portOf(t, app.URL))
	m.healthPort = portOf(t, health.URL)
	m.start(context.Background())
	waitFor(t, 10*time.Second, "4 samples retried", func() bool {
		samples, _ := m.requests.sorted()
		n := 0
		for _, sm := range samples {
			if sm.retried {
				n++
			}
		}
		return n >= 4
	})
	m.stop()
	res := m.requests.result(scenario.MeasureRequests, time.Now(), time.Time{})
	if res.Failed != 0 || res.Retried < 4 || len(res.Gaps) != 0 {
		t.Errorf("result %+v: want no failure and the refused first tries counted as retried", res)
	}
}

// TestEndpointReadingsOutOfOrder: a reading answered after one begun later
// is left out, so that overlapping readings answered out of order do not
// cut a gap the endpoints never had.
func TestEndpointReadingsOutOfOrder(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	m := newMonitor(scenario.Workload{Name: "web", Target: "t"}, providers.Object{Kind: "Machine", Name: "m"}, outageObjects{&down}, netip.MustParsePrefix("127.0.0.0/8"), 0)
	ctx := context.Background()
	var n [5]uint64
	var at [5]time.Time
	for i := 1; i <= 4; i++ {
		n[i], at[i] = m.endpoints.begin()
	}
	m.sampleEndpoints(ctx, n[1], at[1]) // up
	down.Store(true)
	m.sampleEndpoints(ctx, n[3], at[3]) // down, answered first
	down.Store(false)
	m.sampleEndpoints(ctx, n[2], at[2]) // begun before 3, answered after it: left out
	m.sampleEndpoints(ctx, n[4], at[4]) // up again
	samples, unreadable := m.endpoints.sorted()
	var got []bool
	for _, sm := range samples {
		got = append(got, sm.ok)
	}
	if want := []bool{true, false, true}; !slices.Equal(got, want) || unreadable != 0 {
		t.Errorf("samples %v (unreadable %d), want %v", got, unreadable, want)
	}
	if down, _, _, known := m.endpoints.state(); !known || down {
		t.Errorf("state: down %t (known %t), want up: every reading ended", down, known)
	}
}

// TestStateWaitsForPending: a measure is not back while a request begun
// before the good one is still waiting for its answer (a timeout), and
// is down once that one fails.
func TestStateWaitsForPending(t *testing.T) {
	t.Parallel()
	var s series
	first, at := s.begin()
	s.end(first, &sample{at: at, ok: true})
	slow, slowAt := s.begin()
	fast, fastAt := s.begin()
	s.end(fast, &sample{at: fastAt, ok: true})
	if down, since, upto, known := s.state(); !known || down || !since.Equal(at) || !upto.Equal(at) {
		t.Errorf("with one pending: down %t since %s (known %t), want up since the first sample only", down, since, known)
	}
	s.end(slow, &sample{at: slowAt, reason: "timed out"})
	if down, since, upto, known := s.state(); !known || down || !since.Equal(fastAt) || !upto.Equal(fastAt) {
		t.Errorf("all ended: down %t since %s (known %t), want up since the last sample", down, since, known)
	}
	late, lateAt := s.begin()
	s.end(late, &sample{at: lateAt, reason: "connection refused"})
	if down, since, _, known := s.state(); !known || !down || !since.Equal(lateAt) {
		t.Errorf("after a failure: down %t since %s (known %t), want down since it", down, since, known)
	}
	var empty series
	n, _ := empty.begin()
	if _, _, _, known := empty.state(); known {
		t.Error("a series with only a pending sample is known")
	}
	empty.end(n, nil)
}

// TestWatchReadsTheWindowOnly: a workload probe is not reached by samples
// from before its window while a newer one waits for its answer (a phase
// from an undo was reached 0.5ms after it by requests that had succeeded
// before it, while those begun after it were failing), and it is once a
// sample begun in the window is answered.
func TestWatchReadsTheWindowOnly(t *testing.T) {
	t.Parallel()
	m := newMonitor(scenario.Workload{Name: "web", Target: "victim"}, providers.Object{}, nil, netip.Prefix{}, 0)
	before, beforeAt := m.requests.begin()
	m.requests.end(before, &sample{at: beforeAt, ok: true})
	start := time.Now()
	slow, slowAt := m.requests.begin()
	r := &run{in: RunInput{Provider: fake.New("vm-a")}, poll: 10 * time.Millisecond, objects: map[string][]providers.Object{}, monitors: map[string]*monitor{"web": m}}
	cond := scenario.Condition{Probe: "workload-available", Target: "victim", Args: map[string]string{"workload": "web"}}
	met := func(o Observation, _ time.Time) bool { return o.Met }
	if _, err := r.watch(context.Background(), watchSpec{cond: cond, start: start, deadline: time.Now().Add(200 * time.Millisecond)}, met); !errors.Is(err, errWindowOver) {
		t.Fatalf("with only a sample from before the window answered: %v, want the window over unreached", err)
	}
	m.requests.end(slow, &sample{at: slowAt, ok: true})
	if _, err := r.watch(context.Background(), watchSpec{cond: cond, start: start, deadline: time.Now().Add(5 * time.Second)}, met); err != nil {
		t.Fatalf("once a sample of the window is answered: %v, want reached", err)
	}
}
