package engine_test

import (
	"context"
	"errors"
	"strings"
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
