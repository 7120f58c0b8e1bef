package runs

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
)

func load(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", name+".yaml"), nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestTogetherLongestFirst: with Parallel above 1, the leased scenarios
// and those on a lab of their own each start longest first as the
// history took them, those it has no time for after them in their order;
// with no history, in the order given.
func TestTogetherLongestFirst(t *testing.T) {
	names := []string{"power-off-worker", "vm-power-cycle", "delete-cp-vm", "stop-kubelet-worker", "kill-etcd-quorum", "etcd-leader-stuck"}
	order := func(history *artifacts.History) (string, string) {
		r := &Runner{Provider: session.ProviderLab, Parallel: 4, History: history, Profile: "compressed"}
		items := make([]*Item, len(names))
		for i, name := range names {
			sc := load(t, name)
			items[i] = &Item{Scenario: sc, Place: session.Place(sc, session.ProviderLab)}
		}
		var out bytes.Buffer
		var got []string
		for _, it := range r.together(items, &out) {
			got = append(got, it.Scenario.Metadata.Name)
		}
		return strings.Join(got, " "), out.String()
	}
	if got, _ := order(nil); got != "power-off-worker vm-power-cycle kill-etcd-quorum delete-cp-vm stop-kubelet-worker etcd-leader-stuck" {
		t.Errorf("no history: %s", got)
	}
	h, err := artifacts.OpenHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	end := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for name, secs := range map[string]int{"etcd-leader-stuck": 155, "power-off-worker": 20, "delete-cp-vm": 35, "kill-etcd-quorum": 58, "vm-power-cycle": 70} {
		res := &engine.Result{Scenario: name, Provider: session.ProviderLab, Profile: "compressed", Verdict: engine.Pass, StartedAt: end.Add(-time.Duration(secs) * time.Second), FinishedAt: end}
		if name == "vm-power-cycle" {
			res.Profile = "" // no spec.lab: no lab, no profile
		}
		if err := h.Add(res); err != nil {
			t.Fatal(err)
		}
	}
	got, said := order(h)
	if got != "etcd-leader-stuck vm-power-cycle kill-etcd-quorum delete-cp-vm power-off-worker stop-kubelet-worker" {
		t.Errorf("longest first: %s", got)
	}
	if !strings.Contains(said, "longest first, as the history took them: etcd-leader-stuck 2m35s, delete-cp-vm 35s, power-off-worker 20s\n") {
		t.Errorf("the runner does not say the order of the leased ones:\n%s", said)
	}
	if !strings.Contains(said, "longest first, as the history took them: vm-power-cycle 1m10s, kill-etcd-quorum 58s\n") {
		t.Errorf("the runner does not say the order of those on a lab of their own:\n%s", said)
	}
}

// recorder is an executor that records what it ran, and when, and passes
// each item; it blocks each run until release is closed when set.
type recorder struct {
	mu      sync.Mutex
	ran     []string
	beside  map[string]bool
	release chan struct{}
	started chan string
}

func (e *recorder) Run(ctx context.Context, it *Item, sl Slot) (*engine.Result, error) {
	name := it.Scenario.Metadata.Name
	e.mu.Lock()
	e.ran = append(e.ran, name)
	e.beside[name] = sl.Beside
	e.mu.Unlock()
	if e.started != nil {
		e.started <- name
	}
	if e.release != nil {
		select {
		case <-e.release:
		case <-ctx.Done():
		}
	}
	now := time.Now()
	return &engine.Result{Scenario: name, Verdict: engine.Pass, StartedAt: now, FinishedAt: now}, nil
}

// TestRunnerPlaces: the runner skips what its placement skips without the
// executor, runs the leased and own-lab ones side by side and those that
// run alone after them, one at a time, each with its result.
func TestRunnerPlaces(t *testing.T) {
	alone := load(t, "power-off-worker")
	alone.Metadata.Name, alone.Metadata.Labels[session.LabelAlone] = "alone-one", "true"
	items := []*Item{{Scenario: alone}, {Scenario: load(t, "power-off-worker")}, {Scenario: load(t, "pdb-blocks-drain")}, {Scenario: load(t, "vm-power-cycle")}}
	e := &recorder{beside: map[string]bool{}}
	var out bytes.Buffer
	(&Runner{Executor: e, Provider: session.ProviderLab, Parallel: 2, Out: &out}).Run(context.Background(), items)
	if got := strings.Join(e.ran, " "); got != "power-off-worker vm-power-cycle alone-one" && got != "vm-power-cycle power-off-worker alone-one" {
		t.Errorf("ran %s", got)
	}
	if !e.beside["power-off-worker"] || !e.beside["vm-power-cycle"] || e.beside["alone-one"] {
		t.Errorf("beside others: %v", e.beside)
	}
	for _, it := range items {
		if it.Result == nil {
			t.Fatalf("%s has no result", it.Scenario.Metadata.Name)
		}
	}
	if r := items[2].Result; r.Verdict != engine.Skipped || !strings.Contains(r.Reason, "Workloads") || items[2].Dir != "" {
		t.Errorf("pdb-blocks-drain: %+v in %q, want skipped for lacking workloads, with no folder", r, items[2].Dir)
	}
	for _, want := range []string{"alone-one runs alone, after the others: it is labelled alone", "vm-power-cycle runs beside the others on a lab of its own", "=== power-off-worker (beside others)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the runner's lines lack %q:\n%s", want, out.String())
		}
	}
}

// TestRunnerInterrupt: an interrupt starts no more items; those that did
// not start have no result, and those running end with theirs.
func TestRunnerInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	items := []*Item{{Scenario: load(t, "power-off-worker")}, {Scenario: load(t, "delete-cp-vm")}, {Scenario: load(t, "stop-kubelet-worker")}}
	e := &recorder{beside: map[string]bool{}, release: make(chan struct{}), started: make(chan string, len(items))}
	done := make(chan struct{})
	go func() {
		(&Runner{Executor: e, Provider: session.ProviderLab, Parallel: 1}).Run(ctx, items)
		close(done)
	}()
	select {
	case <-e.started:
	case <-time.After(time.Minute):
		t.Fatal("no item started")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the runner did not end after the interrupt")
	}
	if items[0].Result == nil || items[1].Result != nil || items[2].Result != nil {
		t.Errorf("results after the interrupt: %v %v %v; want the first's only", items[0].Result, items[1].Result, items[2].Result)
	}
}
