package lab_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/scenarios/scenariotest"
)

// TestIntegrationSharedLeaseRefusesSecondRunner: two runners with lease
// folders and journals of their own (two hosts, as far as the flock of
// one host can tell) against one lab. The second is refused before any
// fault, naming the first, by the Lease the first holds in the management
// cluster; once the first has undone its faults and let the Lease go, the
// second runs.
func TestIntegrationSharedLeaseRefusesSecondRunner(t *testing.T) {
	l := startLab(t, lab.ClusterSpec{Name: lab.ClusterName, LabSpec: labconfig.LabSpec{ControlPlanes: 1, Workers: 1}})
	sc, err := scenario.Parse("hold-workers.yaml", []byte(scenariotest.HoldWorkers), nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	type runner struct {
		tl   *engine.Timeline
		stop context.CancelFunc
		done chan *engine.Result
	}
	start := func(name string) runner {
		dir := filepath.Join(t.TempDir(), name)
		j, err := engine.OpenJournal(filepath.Join(dir, "journal.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		r := runner{tl: engine.NewTimeline(nil), stop: stop, done: make(chan *engine.Result, 1)}
		go func() {
			defer j.Close()
			res, err := engine.Run(rctx, engine.RunInput{Scenario: sc, Provider: l.Provider(), Journal: j, Timeline: r.tl, Leases: filepath.Join(dir, "leases")})
			if err != nil {
				t.Error(err)
			}
			r.done <- res
		}()
		return r
	}
	// injected waits until r has powered its worker off, holding its
	// Lease, or has ended.
	injected := func(r runner) *engine.Result {
		for {
			for _, e := range r.tl.Events() {
				if e.What == "fault-injected" {
					return nil
				}
			}
			select {
			case res := <-r.done:
				return res
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	first := start("first")
	if res := injected(first); res != nil {
		t.Fatalf("first runner ended: %s (%s)", res.Verdict, res.Reason)
	}
	second := <-start("second").done
	if second == nil || second.Verdict != engine.Error || !strings.Contains(second.Reason, engine.ErrTargetLeased.Error()) ||
		!strings.Contains(second.Reason, "scenario hold-workers, journal") || len(second.Faults) != 0 {
		t.Fatalf("second runner: %+v; want an error naming the first runner's Lease, nothing injected", second)
	}
	t.Logf("second runner refused: %s", second.Reason)
	first.stop()
	if res := <-first.done; res == nil || res.Verdict != engine.Interrupted {
		t.Fatalf("first runner: %+v, want interrupted", res)
	}
	// The first let its Lease go with its faults undone: a third runs.
	third := start("third")
	if res := injected(third); res != nil {
		t.Fatalf("third runner, after the first let its Lease go: %s (%s)", res.Verdict, res.Reason)
	}
	third.stop()
	<-third.done
}
