package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// Recover undoes a journal's pending faults newest first, closes a lab's
// as abandoned, leaves a failed one pending, and refuses an unreadable
// journal before undoing anything.
func TestRecover(t *testing.T) {
	t.Parallel()
	p := fake.New("a", "b", "c")
	for _, vm := range []string{"a", "b", "c"} {
		p.Set(vm, providers.PoweredOff)
	}
	p.FailOn("PowerOn", "c", errors.New("host unreachable"))
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := engine.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(id, vm, provider string) engine.JournalEntry {
		undo := &engine.UndoAction{Action: "vm.power-on", Target: providers.Object{Kind: "VirtualMachine", Name: vm, ID: vm}}
		return engine.JournalEntry{Op: engine.OpInject, FaultID: id, Kind: "vm.power-off", Undo: undo, Provider: providers.ProviderRef{Name: provider}}
	}
	for _, e := range []engine.JournalEntry{entry("off/a", "a", "fake"), entry("off/b", "b", "fake"), entry("lab/x", "x", "lab"), entry("off/c", "c", "fake")} {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	sum, err := engine.Recover(context.Background(), engine.RecoverInput{
		Journals: []string{path},
		Reconnect: func(_ context.Context, e engine.JournalEntry) (providers.Provider, error) {
			if e.Provider.Name == "lab" {
				return nil, engine.ErrProviderGone
			}
			return p, nil
		},
		Report: func(r engine.Recovered) { got = append(got, r.Entry.FaultID+"="+r.Result) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"off/c=", "lab/x=abandoned", "off/b=undone", "off/a=undone"}
	if len(got) != len(want) {
		t.Fatalf("reports %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reports %v, want %v", got, want)
		}
	}
	if sum.Pending != 4 || sum.Failed != 1 {
		t.Fatalf("summary %+v, want 4 pending, 1 failed", sum)
	}
	if st := p.VM("a").State; st != providers.PoweredOn {
		t.Fatalf("vm a is %s after recover", st)
	}
	entries, err := engine.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if left := engine.Pending(entries); len(left) != 1 || left[0].FaultID != "off/c" {
		t.Fatalf("pending after recover: %+v, want only off/c", left)
	}

	bad := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(bad, []byte("not json\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reconnected := false
	_, err = engine.Recover(context.Background(), engine.RecoverInput{
		Journals: []string{bad, path},
		Reconnect: func(context.Context, engine.JournalEntry) (providers.Provider, error) {
			reconnected = true
			return p, nil
		},
	})
	if !errors.Is(err, engine.ErrBadJournal) || reconnected {
		t.Fatalf("an unreadable journal: err %v, reconnected %t; want ErrBadJournal before any undo", err, reconnected)
	}
}
