package engine_test

import (
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
