package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/artifacts"
)

// TestReport: report.html and junit.xml are written again from a run
// folder's result.json, linking its dumps; a folder without a readable
// result is bad input.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	result := `{"scenario": "power-off-worker", "provider": "lab", "verdict": "fail", "reason": "phase machine-unhealthy not reached within its budget 30s of inject",
  "startedAt": "2026-11-23T10:00:00Z", "finishedAt": "2026-11-23T10:00:45Z", "targets": [], "assertions": [], "faults": [],
  "phases": [{"name": "machine-unhealthy", "observedAt": null, "sinceInject": null, "from": "inject", "anchorAt": "2026-11-23T10:00:05Z", "budget": "30s", "ok": false}]}`
	if err := os.MkdirAll(filepath.Join(dir, "dumps"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"result.json": result, "dumps/machines.yaml": "items: []\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	if code := execute([]string{"report", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.Contains(report, []byte(`href="dumps/machines.yaml"`)) || !bytes.Contains(report, []byte(`<rect class="missed"`)) {
		t.Errorf("report.html: %v\n%s", err, report)
	}
	junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil || !bytes.Contains(junit, []byte(`failures="1"`)) {
		t.Errorf("junit.xml: %v\n%s", err, junit)
	}
	// Again with the history: the run before counts, the one after not.
	hist := t.TempDir()
	records := `{"finishedAt":"2026-11-22T10:00:00Z","provider":"lab","verdict":"pass","phases":{"machine-unhealthy":3.5}}
{"finishedAt":"2026-11-24T10:00:00Z","provider":"lab","verdict":"pass","phases":{"machine-unhealthy":9}}
`
	if err := os.WriteFile(filepath.Join(hist, "power-off-worker.jsonl"), []byte(records), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := execute([]string{"report", dir, "--history", hist}, &out, &errOut); code != 0 {
		t.Fatalf("--history: exit %d: %s", code, errOut.String())
	}
	report, err = os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.Contains(report, []byte("P50 3.5s, P95 3.5s, limit 8.5s (1 passing runs)")) || !bytes.Contains(report, []byte(`<svg class="trend"`)) {
		t.Errorf("report.html with --history: %v\n%s", err, report)
	}

	if err := os.WriteFile(filepath.Join(dir, "result.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{dir, filepath.Join(dir, "result.json") + ": invalid character"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
	} {
		errOut.Reset()
		if code := execute([]string{"report", tc.dir}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("report %s: exit %d, %q; want 2 and %q", tc.dir, code, errOut.String(), tc.want)
		}
	}
}

// TestHistoryCommand: the gate needs a history; history prints what the
// gate compares with.
func TestHistoryCommand(t *testing.T) {
	t.Setenv("FAULTLINE_HISTORY", "")
	var out, errOut bytes.Buffer
	if code := execute([]string{"run", "power-off-worker", "--gate"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--gate needs --history") {
		t.Errorf("run --gate: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := execute([]string{"history", "power-off-worker"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--history (or $FAULTLINE_HISTORY)") {
		t.Errorf("history: exit %d, %q", code, errOut.String())
	}
	dir := t.TempDir()
	lines := `{"finishedAt":"2026-11-23T10:00:00Z","provider":"lab","profile":"compressed","verdict":"pass","phases":{"machine-unhealthy":12.5}}
{"finishedAt":"2026-11-24T10:00:00Z","provider":"lab","profile":"compressed","verdict":"fail","phases":{}}
{"finishedAt":"2026-11-25T10:00:00Z","provider":"lab","profile":"compressed","verdict":"pass","phases":{"machine-unhealthy":6.5}}
`
	if err := os.WriteFile(filepath.Join(dir, "power-off-worker.jsonl"), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "delete-cp-vm.jsonl"), []byte(strings.SplitAfter(lines, "\n")[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	page := filepath.Join(t.TempDir(), "history.html")
	// No scenario named: every scenario of the folder.
	if code := execute([]string{"history", "--history", dir, "--html", page}, &out, &errOut); code != 0 {
		t.Fatalf("history: exit %d, %s", code, errOut.String())
	}
	for _, want := range []string{"power-off-worker on lab compressed: 1 phases with history", "machine-unhealthy  2     1       6.5s  12.5s  17.5s  6.5s  █✗▅",
		"delete-cp-vm on lab compressed: 1 phases with history"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	html, err := os.ReadFile(page)
	if err != nil || strings.Count(string(html), `<svg class="trend"`) != 2 || !strings.Contains(string(html), "1 failed left out") {
		t.Errorf("history page (%v):\n%s", err, html)
	}
	// -o json: the same statistics, and every run of the trend.
	out.Reset()
	if code := execute([]string{"history", "power-off-worker", "--history", dir, "-o", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("history -o json: exit %d, %s", code, errOut.String())
	}
	var got struct {
		Provider  string
		Scenarios []struct {
			Scenario string
			Phases   []artifacts.PhaseStats
		}
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Provider != "lab" || len(got.Scenarios) != 1 || len(got.Scenarios[0].Phases) != 1 {
		t.Fatalf("history -o json (%v):\n%s", err, out.String())
	}
	if ph := got.Scenarios[0].Phases[0]; ph.Phase != "machine-unhealthy" || ph.Runs != 2 || ph.Failed != 1 || ph.P50 != 6.5 || len(ph.Points) != 3 {
		t.Errorf("history -o json: phase %+v, want machine-unhealthy of 2 passing runs and 1 failed, P50 6.5s, 3 points", ph)
	}
}
