package artifacts

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
)

// The Markdown summary has a line per run and each run's phases against
// their budgets; a cell never breaks the table.
func TestMarkdownSummary(t *testing.T) {
	failed := failedRun()
	failed.Reason = "phase a | b\nnot reached"
	md, err := MarkdownSummary([]*engine.Result{failed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## faultline: 0 of 1 scenarios passed",
		"| " + failed.Scenario + " | ❌ fail |",
		`phase a \| b not reached |`,
		"| ✅ | phase node-not-ready | 2.2s after inject | 1m0s |",
		"| ❌ | phase machine-unhealthy | not reached | 30s |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
}

// TestIndexNamesWhenWhereRelease: a run's index says when it started (UTC),
// on which host with which faultline, and each scenario's start,
// provider and release (an upgrade's both).
func TestIndexNamesWhenWhereRelease(t *testing.T) {
	at := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	run := &engine.RunInfo{Host: "ci-runner-7", Faultline: "v0.1.0-abc"}
	entries := []IndexEntry{
		{Result: &engine.Result{Scenario: "power-off-worker", Provider: "lab", Verdict: engine.Pass, StartedAt: at, FinishedAt: at.Add(20 * time.Second), Run: run,
			Release: &engine.Release{Stack: "v1.13"}}, Folder: "power-off-worker"},
		{Result: &engine.Result{Scenario: "upgrade-management-during-remediation", Provider: "lab", Verdict: engine.Pass, StartedAt: at.Add(time.Minute), FinishedAt: at.Add(2 * time.Minute), Run: run,
			Release: &engine.Release{Stack: "v1.12", UpgradedTo: &engine.Release{Stack: "v1.13"}}}, Folder: "upgrade"},
	}
	var b strings.Builder
	if err := WriteIndex(&b, entries); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"started 2026-12-07 02:00:00 UTC on ci-runner-7, faultline v0.1.0-abc", "<td>02:01:00</td>", "<td>lab</td><td>v1.13</td>", "<td>v1.12 → v1.13</td>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("index lacks %q:\n%s", want, b.String())
		}
	}
}
