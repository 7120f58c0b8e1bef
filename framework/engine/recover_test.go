package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// Recover undoes a journal's pending faults newest first, closes a lab's
// as abandoned, leaves a failed one pending, and refuses an unreadable
// journal whole while it recovers the others.
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

	// One unreadable journal among those read refuses only itself: the
	// fault the other one still holds (off/c, now undoable) is undone.
	p.FailOn("PowerOn", "c", nil)
	bad := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(bad, []byte("not json\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err = engine.Recover(context.Background(), engine.RecoverInput{
		Journals:  []string{bad, path},
		Reconnect: func(context.Context, engine.JournalEntry) (providers.Provider, error) { return p, nil },
	})
	if !errors.Is(err, engine.ErrBadJournal) || !strings.Contains(err.Error(), bad) || sum.Refused != 1 || sum.Pending != 1 || sum.Failed != 0 {
		t.Fatalf("an unreadable journal beside a good one: %+v, %v; want it refused naming %s, the other's fault undone", sum, err, bad)
	}
	if entries, err = engine.ReadJournal(path); err != nil || len(engine.Pending(entries)) != 0 {
		t.Fatalf("pending after the second recover: %+v, %v", engine.Pending(entries), err)
	}
}

// A journal's lines are bound to it: the sealed inject line of a finished
// run copied into a new file, the same line three times in its own
// journal, and a journal whose done line was cut off are each refused
// naming file:line, before anything is undone; the user may name the
// entry to force it.
func TestRecoverRefusesReplayedJournal(t *testing.T) {
	t.Parallel()
	p := fake.New("a")
	dir := t.TempDir()
	finished := filepath.Join(dir, "finished", "journal.jsonl")
	j, err := engine.OpenJournal(finished)
	if err != nil {
		t.Fatal(err)
	}
	undo := &engine.UndoAction{Action: "vm.power-on", Target: providers.Object{Kind: "VirtualMachine", Name: "a", ID: "a"}}
	if err := errors.Join(
		j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "off/a", Kind: "vm.power-off", Undo: undo, Provider: providers.ProviderRef{Name: "fake"}}),
		j.Append(engine.JournalEntry{Op: engine.OpDone, FaultID: "off/a", Result: engine.ResultUndone, Provider: providers.ProviderRef{Name: "fake"}}),
		j.Close()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(finished)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	write := func(name, content string) string {
		path := filepath.Join(dir, name, "journal.jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// An operator powered the VM off meanwhile: nothing may power it on.
	p.Set("a", providers.PoweredOff)
	replayed := write("replayed", lines[0])
	for _, tc := range []struct {
		name, path, content, want string
	}{
		{"replayed", replayed, "", replayed + ":1: the line was written to " + finished},
		{"tripled", finished, lines[0] + lines[0] + lines[0], finished + ":2: the line was written as line 1"},
		{"truncated", finished, lines[0], finished + ":1: the journal had 2 lines and has 1: its end was cut off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.content != "" {
				if err := os.WriteFile(tc.path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := engine.Recover(context.Background(), engine.RecoverInput{
				Journals:  []string{tc.path},
				Reconnect: func(context.Context, engine.JournalEntry) (providers.Provider, error) { return p, nil },
			})
			if !errors.Is(err, engine.ErrUntrustedJournal) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Recover: %v, want refused naming %q", err, tc.want)
			}
			if p.VM("a").State != providers.PoweredOff || callsTo(p, "a", "PowerOn") != 0 {
				t.Errorf("the VM was powered on from a %s journal", tc.name)
			}
		})
	}
	// Forced, the one entry named is undone.
	var notes []string
	sum, err := engine.Recover(context.Background(), engine.RecoverInput{
		Journals:  []string{replayed},
		Force:     []string{replayed + ":1"},
		Reconnect: func(context.Context, engine.JournalEntry) (providers.Provider, error) { return p, nil },
		Note:      func(s string) { notes = append(notes, s) },
	})
	if err != nil || sum.Pending != 1 || p.VM("a").State != providers.PoweredOn || len(notes) != 1 {
		t.Errorf("forced: %v, %+v, VM %s, notes %q", err, sum, p.VM("a").State, notes)
	}
}

// An object a fault deleted that exists again when recover runs is not
// replaced by the backup unless the entry is forced: that would overwrite
// whoever made it since.
func TestRecoverLeavesChangedObjects(t *testing.T) {
	t.Parallel()
	p := fake.New("a")
	dir := t.TempDir()
	backup := filepath.Join(dir, "configmap-default-x.yaml")
	if err := os.WriteFile(backup, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\ndata:\n  k: old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal.jsonl")
	j, err := engine.OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	undo := &engine.UndoAction{Action: "object.restore", Target: providers.Object{Kind: "VirtualMachine", Name: "a", ID: "a"}, Params: map[string]string{"cluster": "workload", "file": backup}}
	if err := errors.Join(j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "rm/x", Kind: "object.delete", Undo: undo, Provider: providers.ProviderRef{Name: "fake"}}), j.Close()); err != nil {
		t.Fatal(err)
	}
	ref := providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "x"}
	p.SetObject(ref, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "default"}, "data": map[string]any{"k": "new"}})
	var got error
	sum, err := engine.Recover(context.Background(), engine.RecoverInput{
		Journals:  []string{journal},
		Reconnect: func(context.Context, engine.JournalEntry) (providers.Provider, error) { return p, nil },
		Report:    func(r engine.Recovered) { got = r.Err },
	})
	if err != nil || sum.Failed != 1 || got == nil || !strings.Contains(got.Error(), "ConfigMap default/x") || !strings.Contains(got.Error(), "exists again") ||
		!strings.Contains(got.Error(), "--force-entry "+journal+":1") {
		t.Errorf("recover over a recreated object: %v, %+v, %v", err, sum, got)
	}
	if entries, err := engine.ReadJournal(journal); err != nil || len(engine.Pending(entries)) != 1 {
		t.Errorf("the entry is not pending: %v %+v", err, entries)
	}
}

// A Deployment a fault scaled that someone scaled again since is not set
// back to the backup's count unless the entry is forced (the setting back
// itself: TestObjectScaleRoundTrip in providers/capi).
func TestRecoverLeavesRescaledObjects(t *testing.T) {
	t.Parallel()
	p := fake.New("a")
	dir := t.TempDir()
	backup := filepath.Join(dir, "deployment-default-web.yaml")
	if err := os.WriteFile(backup, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal.jsonl")
	j, err := engine.OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	undo := &engine.UndoAction{Action: "object.unscale", Target: providers.Object{Kind: "VirtualMachine", Name: "a", ID: "a"}, Params: map[string]string{"cluster": "workload", "file": backup, "replicas": "0"}}
	if err := errors.Join(j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "scale/web", Kind: "object.scale", Undo: undo, Provider: providers.ProviderRef{Name: "fake"}}), j.Close()); err != nil {
		t.Fatal(err)
	}
	// Someone scaled it to 5 since the fault set 0.
	ref := providers.ObjectRef{Cluster: "workload", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web"}
	p.SetObject(ref, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "default"}, "spec": map[string]any{"replicas": int64(5)}})
	var got error
	sum, err := engine.Recover(context.Background(), engine.RecoverInput{
		Journals:  []string{journal},
		Reconnect: func(context.Context, engine.JournalEntry) (providers.Provider, error) { return p, nil },
		Report:    func(r engine.Recovered) { got = r.Err },
	})
	if err != nil || sum.Failed != 1 || got == nil || !strings.Contains(got.Error(), "was scaled since the fault set its replicas to 0") {
		t.Errorf("recover over a rescaled Deployment: %v, %+v, %v", err, sum, got)
	}
	o, err := p.GetObject(context.Background(), providers.Object{}, ref)
	if spec, _ := o["spec"].(map[string]any); err != nil || spec["replicas"] != int64(5) {
		t.Errorf("after recover %v (%v), want its 5 replicas left", o, err)
	}
}

// TestRecoverLeavesLiveRun: a run still writes its journal (holds it
// open, as session.Execute does until the run ends) when another job's
// bare recover reads every journal: the live run's pending power-off is
// left to it, named as skipped, while a dead run's is undone. Once the
// live run closes its journal (or dies: the kernel drops its lock), a
// recover undoes it. Before, recover powered the live run's VM on under
// it, and that run failed.
func TestRecoverLeavesLiveRun(t *testing.T) {
	t.Parallel()
	p := fake.New("live", "dead")
	p.Set("live", providers.PoweredOff)
	p.Set("dead", providers.PoweredOff)
	dir := t.TempDir()
	pendingJournal := func(name, vm string) *engine.Journal {
		j, err := engine.OpenJournal(filepath.Join(dir, name, "journal.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		undo := &engine.UndoAction{Action: "vm.power-on", Target: providers.Object{Kind: "VirtualMachine", Name: vm, ID: vm}}
		if err := j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "off/" + vm, Kind: "vm.power-off", Undo: undo, Provider: providers.ProviderRef{Name: "fake"}}); err != nil {
			t.Fatal(err)
		}
		return j
	}
	live := pendingJournal("live", "live")
	if err := pendingJournal("dead", "dead").Close(); err != nil {
		t.Fatal(err)
	}
	journals := []string{filepath.Join(dir, "live", "journal.jsonl"), filepath.Join(dir, "dead", "journal.jsonl")}
	var notes []string
	recover := func() engine.RecoverSummary {
		t.Helper()
		sum, err := engine.Recover(context.Background(), engine.RecoverInput{
			Journals:  journals,
			Reconnect: func(context.Context, engine.JournalEntry) (providers.Provider, error) { return p, nil },
			Note:      func(s string) { notes = append(notes, s) },
		})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	if sum := recover(); sum.Skipped != 1 || sum.Pending != 1 {
		t.Errorf("summary %+v, want the live journal skipped and the dead one's fault undone", sum)
	}
	if p.VM("live").State != providers.PoweredOff || p.VM("dead").State != providers.PoweredOn {
		t.Errorf("live VM %s, dead run's VM %s; want the live run's fault left in place and the dead one's undone", p.VM("live").State, p.VM("dead").State)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], journals[0]) || !strings.Contains(notes[0], "still runs") {
		t.Errorf("notes %q, want one naming the skipped journal and why", notes)
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	if sum := recover(); sum.Skipped != 0 || sum.Pending != 1 || p.VM("live").State != providers.PoweredOn {
		t.Errorf("after the run ended: summary %+v, VM %s; want its fault undone", sum, p.VM("live").State)
	}
}
