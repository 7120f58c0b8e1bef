package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// rateLimited answers api-available readings as client-go does near a
// deadline: its rate limiter refuses a request whose wait would pass the
// context's deadline, before the context itself ends.
type rateLimited struct{ *fake.Provider }

// NodeOf reads a Node that is never Ready.
func (r rateLimited) NodeOf(ctx context.Context, _ providers.Object) (providers.MachineState, error) {
	return providers.MachineState{NodeReady: "False"}, r.limit(ctx)
}

func (r rateLimited) APIServer(ctx context.Context, _ providers.Object) error { return r.limit(ctx) }

func (rateLimited) limit(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < 120*time.Millisecond {
		return errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	}
	return nil
}

// A reading cut by the end of its window says nothing about the API
// server: the window holds.
func TestConsistentlyIgnoresReadingCutByItsWindow(t *testing.T) {
	t.Parallel()
	sc := parseScenario(t, "[Nodes]", "", `
    - name: victim
      select: {vm: vm-a}`, `
    - name: served
      assert:
        consistently:
          condition: {probe: api-available, target: victim}
          for: 600ms
`)
	res, _ := run(t, context.Background(), sc, rateLimited{fake.New("vm-a")})
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Reason)
	}
}

// A phase not reached whose last reading was cut by the budget's end fails
// naming the phase; it is not an error of the probe.
func TestPhaseMissedWithReadingCutByItsBudget(t *testing.T) {
	t.Parallel()
	sc := parseScenario(t, "[Nodes]", "", `
    - name: victim
      select: {vm: vm-a}`, `
    - name: ready
      observe:
        phases:
          - name: node-ready
            when: {probe: node-ready, target: victim}
            within: 600ms
`)
	res, _ := run(t, context.Background(), sc, rateLimited{fake.New("vm-a")})
	if res.Verdict != engine.Fail || !strings.Contains(res.Reason, "phase node-ready not reached within its budget 600ms") || strings.Contains(res.Reason, "rate limiter") {
		t.Fatalf("verdict %s: %s; want a failure naming the phase", res.Verdict, res.Reason)
	}
}

// lateReads is a provider whose first power-state read of a powered-off
// VM comes back only once its context has ended: a read that finished
// after the window it was taken for closed.
type lateReads struct {
	*fake.Provider
	armed *atomic.Bool
}

func (p lateReads) PowerState(ctx context.Context, o providers.Object) (providers.PowerState, error) {
	if p.VM(o.Name).State == providers.PoweredOff && p.armed.CompareAndSwap(true, false) {
		<-ctx.Done()
		return p.Provider.PowerState(context.WithoutCancel(ctx), o)
	}
	return p.Provider.PowerState(ctx, o)
}

// A phase is reached only by a reading that came back within its budget:
// one that came back after it does not count (it did, reached "1.04s after
// inject" with a budget of 1s, on a loaded CI machine).
func TestPhaseIgnoresReadingsAfterItsBudget(t *testing.T) {
	t.Parallel()
	s := powerOffObserved(t, `
          - {name: vm-off, when: {probe: vm-powered-off, target: victim}, within: 300ms}
`)
	armed := &atomic.Bool{}
	armed.Store(true)
	res, _ := run(t, context.Background(), s, lateReads{Provider: fake.New("vm-a"), armed: armed})
	if res.Verdict != engine.Fail || len(res.Phases) != 1 || res.Phases[0].OK || !strings.Contains(res.Phases[0].Message, "not reached within its budget 300ms") {
		t.Fatalf("verdict %s (%s), phases %+v: want vm-off missed, its only reading late", res.Verdict, res.Reason, res.Phases)
	}
}
