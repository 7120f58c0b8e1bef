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
)

func TestJournalPendingAndTornLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "journal.jsonl")
	j, err := engine.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	undo := &engine.UndoAction{Action: "vm.power-on", Target: providers.Object{Kind: "VirtualMachine", Name: "a"}}
	for _, e := range []engine.JournalEntry{
		{Op: engine.OpInject, FaultID: "off/a", Undo: undo},
		{Op: engine.OpInject, FaultID: "off/b", Undo: undo},
		{Op: engine.OpDone, FaultID: "off/a", Result: engine.ResultUndone},
	} {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash mid-write leaves a torn last line.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"op":"inject","faultID":"off/c"`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := engine.ReadJournal(path)
	if err != nil {
		t.Fatalf("ReadJournal with a torn last line: %v", err)
	}
	pending := engine.Pending(entries)
	if len(pending) != 1 || pending[0].FaultID != "off/b" {
		t.Errorf("pending = %+v, want only off/b", pending)
	}

	// A bad line in the middle is corruption, not a torn write.
	if err := os.WriteFile(path, []byte("garbage\n{\"op\":\"done\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.ReadJournal(path); err == nil || !strings.Contains(err.Error(), "journal.jsonl:1: not a journal entry") {
		t.Errorf("corrupt journal = %v, want an error naming line 1", err)
	}
}

// Every journal line is sealed with the journal key: an entry edited
// afterwards, one sealed with another key, and a key file others can read
// are refused with the file and line, and recover then undoes nothing.
func TestJournalSeal(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "config", "journal.key")
	t.Setenv(engine.EnvJournalKey, keyFile)
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := engine.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	undo := &engine.UndoAction{Action: "vm.power-on", Target: providers.Object{Kind: "VirtualMachine", Name: "a"}}
	ref := providers.ProviderRef{Name: "vsphere", Config: map[string]string{"url": "https://vc.example.com/sdk"}}
	for _, id := range []string{"off/a", "off/b"} {
		if err := j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: id, Undo: undo, Provider: ref}); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	key, err := engine.LoadJournalKey(keyFile, false)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := engine.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.VerifyJournal(path, entries, key); err != nil {
		t.Fatalf("a journal as faultline wrote it: %v", err)
	}
	other, err := engine.LoadJournalKey(filepath.Join(t.TempDir(), "other.key"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.VerifyJournal(path, entries, other); !errors.Is(err, engine.ErrUntrustedJournal) || !strings.Contains(err.Error(), "journal.jsonl:1:") {
		t.Errorf("another host's key: %v, want ErrUntrustedJournal at line 1", err)
	}

	// The second entry is pointed at another vCenter.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines[1] = strings.Replace(lines[1], "vc.example.com", "evil.example.com", 1)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	reconnected := false
	_, err = engine.Recover(context.Background(), engine.RecoverInput{
		Journals: []string{path},
		Reconnect: func(context.Context, engine.JournalEntry) (providers.Provider, error) {
			reconnected = true
			return nil, errors.New("no provider")
		},
	})
	if !errors.Is(err, engine.ErrUntrustedJournal) || !strings.Contains(err.Error(), "journal.jsonl:2:") || reconnected {
		t.Errorf("an edited entry: err %v, reconnected %t; want ErrUntrustedJournal at line 2 before any reconnect", err, reconnected)
	}

	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.LoadJournalKey(keyFile, false); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key others can read: %v, want a refusal", err)
	}
}

// BenchmarkJournalAppend measures the price of durability: one fsynced line
// per fault, against BenchmarkTimelineRecord's unsynced one.
func BenchmarkJournalAppend(b *testing.B) {
	j, err := engine.OpenJournal(filepath.Join(b.TempDir(), "journal.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	e := engine.JournalEntry{Op: engine.OpInject, FaultID: "off/a", Undo: &engine.UndoAction{Action: "vm.power-on"}}
	for b.Loop() {
		if err := j.Append(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTimelineRecord(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "timeline.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tl := engine.NewTimeline(f)
	for b.Loop() {
		tl.Record("runner", "VirtualMachine/a", "fault-injected", map[string]string{"id": "off/a"})
	}
}

// A run into a folder that holds a journal goes on with it only when it
// verifies: with its done line cut off, appending would hide the cut and
// recover would then undo the finished fault again, so it is refused
// naming the line; the journal intact, the run goes on with its chain.
func TestOpenJournalVerifiesBeforeAppending(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := engine.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	undo := &engine.UndoAction{Action: "vm.power-on", Target: providers.Object{Kind: "VirtualMachine", Name: "a"}}
	if err := errors.Join(
		j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "off/a", Undo: undo}),
		j.Append(engine.JournalEntry{Op: engine.OpDone, FaultID: "off/a", Result: engine.ResultUndone}),
		j.Close()); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := engine.OpenJournal(path)
	if err != nil {
		t.Fatalf("reopening an intact journal: %v", err)
	}
	if err := errors.Join(again.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "off/b", Undo: undo}), again.Close()); err != nil {
		t.Fatal(err)
	}
	if third, err := engine.OpenJournal(path); err != nil {
		t.Fatalf("the journal gone on with does not verify: %v", err)
	} else if err := third.Close(); err != nil {
		t.Fatal(err)
	}

	first := strings.SplitAfter(string(whole), "\n")[0]
	if err := os.WriteFile(path, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.OpenJournal(path); !errors.Is(err, engine.ErrUntrustedJournal) || !strings.Contains(err.Error(), path+":1: the journal had 3 lines and has 1") {
		t.Fatalf("reopening a journal cut short: %v, want refused naming %s:1", err, path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != first {
		t.Fatalf("the refused journal changed: %q, %v", b, err)
	}
}
