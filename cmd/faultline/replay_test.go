package main

import (
	"slices"
	"testing"
)

// The replay base keeps the flags that say where a run went and leaves out
// output, selection, per-run values and user names.
func TestReplayBase(t *testing.T) {
	t.Parallel()
	cmd := newRunCommand()
	if err := cmd.ParseFlags([]string{"--provider", "kind", "--kind-cluster", "night", "--set", "a=1", "--seed", "4", "-o", "json",
		"--artifacts", "/tmp/x", "--allow-context", "kind-night,kind-day", "--vcenter-username", "admin", "--timeout", "5m", "--vcenter-url", "https://admin:hunter2@vc.example.com/sdk"}); err != nil {
		t.Fatal(err)
	}
	got := replayBase(cmd.Flags())
	want := []string{"faultline", "run", "--allow-context=kind-night", "--allow-context=kind-day", "--kind-cluster=night", "--provider=kind", "--timeout=5m0s", "--vcenter-url=https://vc.example.com/sdk"}
	if !slices.Equal(got, want) {
		t.Errorf("replay base %q, want %q", got, want)
	}
}
