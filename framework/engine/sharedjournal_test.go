package engine_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// copying is the fake provider with journal copies kept in memory: what
// each put left, by namespace/id, the first put's content, and a failure
// on demand.
type copying struct {
	*fake.Provider
	mu     sync.Mutex
	copies map[string][]byte
	first  []byte
	fail   error
	// offsBeforeCopy is how many power-offs had been made when the copy
	// first held an inject line (-1 before).
	offsBeforeCopy int
}

func (c *copying) PutJournal(_ context.Context, ns, id string, content []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	if c.first == nil {
		c.first = content
	}
	if c.offsBeforeCopy < 0 && bytes.Contains(content, []byte(`"op":"inject"`)) {
		c.offsBeforeCopy = callsTo(c.Provider, "vm-a", "PowerOff")
	}
	c.copies[ns+"/"+id] = content
	return nil
}

func (c *copying) DeleteJournal(_ context.Context, ns, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.copies, ns+"/"+id)
	return nil
}

func (c *copying) Journals(context.Context) ([]providers.SharedJournal, error) { return nil, nil }

func newCopying(t *testing.T) *copying {
	t.Helper()
	p := fake.New("vm-a")
	p.SetAttributes("vm-a", map[providers.Attribute]string{providers.AttrNamespace: "team", providers.AttrCluster: "prod"})
	return &copying{Provider: p, copies: map[string][]byte{}, offsBeforeCopy: -1}
}

// A run copies its journal beside the Cluster it faults before the fault
// is applied, keeps the copy equal to the journal, and deletes it once the
// fault is undone; a fault left in place (--retain) keeps it.
func TestRunSharesJournal(t *testing.T) {
	t.Parallel()
	p := newCopying(t)
	res, journal := run(t, context.Background(), newScenario(t, powerCycle), p)
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict %s (%s)", res.Verdict, res.Reason)
	}
	if len(p.copies) != 0 {
		t.Errorf("copies left after every fault was undone: %v", p.copies)
	}
	if p.first == nil || p.offsBeforeCopy != 0 {
		t.Fatalf("the copy held the inject line after %d power-offs (-1: never), want before the fault", p.offsBeforeCopy)
	}
	if callsTo(p.Provider, "vm-a", "PowerOff") != 1 {
		t.Fatal("the fault was not applied")
	}

	retained := newCopying(t)
	_, journal = run(t, context.Background(), newScenario(t, `
    - name: off
      inject: {fault: vm.power-off, target: victim}
`), retained, func(in *engine.RunInput) { in.Retain = true })
	written, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	if got := retained.copies["team/"+journalID(t, journal)]; !bytes.Equal(got, written) || len(pending(t, journal)) != 1 {
		t.Errorf("with the fault retained the copy is %q, want the journal as written (%q), its fault pending", got, written)
	}
}

// A copy that cannot be written stops the run before any fault.
func TestRunRefusesUnsharedJournal(t *testing.T) {
	t.Parallel()
	p := newCopying(t)
	p.fail = errors.New("secrets is forbidden")
	res, _ := run(t, context.Background(), newScenario(t, powerCycle), p)
	if res.Verdict != engine.Error || len(res.Faults) != 0 || callsTo(p.Provider, "vm-a", "PowerOff") != 0 {
		t.Fatalf("verdict %s (%s), faults %+v; want an error before any fault", res.Verdict, res.Reason, res.Faults)
	}
	if !bytes.Contains([]byte(res.Reason), []byte("secrets is forbidden")) {
		t.Errorf("reason %q does not say why", res.Reason)
	}
}

func journalID(t *testing.T, path string) string {
	t.Helper()
	entries, err := engine.ReadJournal(path)
	if err != nil || len(entries) == 0 {
		t.Fatalf("journal %s: %v", path, err)
	}
	return entries[0].Journal
}
