package artifacts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/internal/regularfile"
)

func runTook(verdict engine.Verdict, profile string, secs float64) *engine.Result {
	d := scenario.D(time.Duration(secs * float64(time.Second)))
	return &engine.Result{Scenario: "power-off-worker", Provider: "lab", Profile: profile, Verdict: verdict, FinishedAt: time.Now(),
		Phases: []engine.PhaseResult{{Name: "machine-unhealthy", OK: verdict == engine.Pass, SinceAnchor: &d}}}
}

// TestHistoryGate: P50 and P95 of past passing runs on the same provider
// and profile; a phase above P95 + max(5s, 20%) is a regression, once
// there are enough runs.
func TestHistoryGate(t *testing.T) {
	h, err := OpenHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, secs := range []float64{10, 11, 12, 13} {
		if err := h.Add(runTook(engine.Pass, "compressed", secs)); err != nil {
			t.Fatal(i, err)
		}
	}
	// Not counted: a failed run, and runs of the real profile.
	for _, r := range []*engine.Result{runTook(engine.Fail, "compressed", 90), runTook(engine.Pass, "real", 300)} {
		if err := h.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := h.Stats("power-off-worker", "lab", "compressed")
	if err != nil {
		t.Fatal(err)
	}
	if s := stats["machine-unhealthy"]; s.Runs != 4 {
		t.Fatalf("stats %+v, want 4 runs", s)
	}
	if reg := Regressions(runTook(engine.Pass, "compressed", 60), stats); len(reg) != 0 {
		t.Errorf("4 runs are too few to judge, got %v", reg)
	}
	if err := h.Add(runTook(engine.Pass, "compressed", 15)); err != nil {
		t.Fatal(err)
	}
	stats, err = h.Stats("power-off-worker", "lab", "compressed")
	if err != nil {
		t.Fatal(err)
	}
	s := stats["machine-unhealthy"]
	if s.Runs != 5 || s.P50 != 12 || s.P95 != 15 || s.Last != 15 || s.Limit() != 20 {
		t.Fatalf("stats %+v limit %.1f, want 5 runs, P50 12, P95 15, last 15, limit 20", s, s.Limit())
	}
	if reg := Regressions(runTook(engine.Pass, "compressed", 19.9), stats); len(reg) != 0 {
		t.Errorf("19.9s is within the limit, got %v", reg)
	}
	slow := runTook(engine.Pass, "compressed", 25)
	ApplyGate(slow, stats)
	want := "regression: phase machine-unhealthy took 25.0s, above its history's P95 15.0s + max(5s, 20%) = 20.0s (5 runs)"
	if slow.Verdict != engine.Fail || slow.Reason != want {
		t.Errorf("gate: %s %q, want fail %q", slow.Verdict, slow.Reason, want)
	}
	// A long history: 20% of P95 is more than 5s.
	if got := (PhaseStats{P95: 100}).Limit(); got != 120 {
		t.Errorf("limit of P95 100s: %.1f, want 120", got)
	}

	if err := os.WriteFile(h.file("broken"), []byte("{\"verdict\":\"pass\"}\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A line that does not parse is skipped, saying which file and line.
	var warned []string
	h.Warn = func(s string) { warned = append(warned, s) }
	if _, err := h.Stats("broken", "lab", ""); err != nil || len(warned) != 1 || !strings.Contains(warned[0], "broken.jsonl: 1 unreadable line(s) skipped (the first: line 2)") {
		t.Errorf("a corrupt history: %v, warnings %q; want its line 2 skipped, saying so", err, warned)
	}
}

// A phase's trend: every past run in order, the failed ones counted and
// left out of P50 and P95, only the runs before the one shown, and in the
// report a point per run, this run last, the band and the gate's limit;
// the Markdown summary gives the change against the last passing run.
func TestHistoryTrend(t *testing.T) {
	h, err := OpenHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)
	for i, secs := range []float64{10, 11, 30, 12, 13, 14} {
		v := engine.Pass
		if secs == 30 {
			v = engine.Fail
		}
		r := runTook(v, "compressed", secs)
		// The failed run failed elsewhere: this phase was reached.
		r.Phases[0].OK = true
		r.FinishedAt = t0.Add(time.Duration(i) * 24 * time.Hour)
		if err := h.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	now := runTook(engine.Pass, "compressed", 15)
	now.FinishedAt = t0.Add(5 * 24 * time.Hour) // the last record is this run
	// A run of a minute: a zero start would draw its chart over 2026 years.
	now.StartedAt = now.FinishedAt.Add(-time.Minute)
	stats, err := h.StatsBefore("power-off-worker", "lab", "compressed", now.FinishedAt)
	if err != nil {
		t.Fatal(err)
	}
	s := stats["machine-unhealthy"]
	if len(s.Points) != 5 || s.Runs != 4 || s.Failed != 1 || s.Last != 13 || s.Points[2].Verdict != engine.Fail {
		t.Fatalf("stats %+v: want 5 points, 4 passing runs, 1 failed, last 13", s)
	}
	var b strings.Builder
	if err := WriteReport(&b, now, nil, stats); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"+2.0s on the last (4 passing runs, 1 failed left out)", `<svg class="trend"`, `class="band"`, `class="limit"`, `class="now"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(html, `<circle class="past"`); n != 4 {
		t.Errorf("%d past points, want 4", n)
	}
	// The failed run reached this phase: a hollow point, no cross (a
	// cross is a phase not reached).
	if n, crosses := strings.Count(html, `<circle class="pastrun"`), strings.Count(html, `class="failed"`); n != 1 || crosses != 0 {
		t.Errorf("%d points of failed runs and %d crosses, want 1 and 0", n, crosses)
	}
	md, err := MarkdownSummary([]*engine.Result{now}, h)
	if err != nil || !strings.Contains(md, "| P50 11.0s, P95 13.0s, +2.0s on the last (4 runs, 1 failed left out) |") {
		t.Errorf("summary (%v):\n%s", err, md)
	}
}

// TestHistoryTook: the median start-to-finish of past passing runs on the
// same provider and profile; records without a start (written before it
// was kept) and failed runs are not counted, and none is "not known".
func TestHistoryTook(t *testing.T) {
	h, err := OpenHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := h.Took("power-off-worker", "lab", "compressed"); ok || err != nil {
		t.Fatalf("no history: known %v, %v", ok, err)
	}
	if err := os.WriteFile(h.file("power-off-worker"), []byte(`{"finishedAt":"2026-11-28T10:00:00Z","provider":"lab","profile":"compressed","verdict":"pass","phases":{}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := h.Took("power-off-worker", "lab", "compressed"); ok || err != nil {
		t.Fatalf("a record without its start: known %v, %v", ok, err)
	}
	for _, r := range []struct {
		verdict engine.Verdict
		profile string
		secs    float64
	}{{engine.Pass, "compressed", 30}, {engine.Pass, "compressed", 10}, {engine.Fail, "compressed", 500}, {engine.Pass, "real", 900}, {engine.Pass, "compressed", 20}} {
		res := runTook(r.verdict, r.profile, 1)
		res.StartedAt = res.FinishedAt.Add(-time.Duration(r.secs * float64(time.Second)))
		if err := h.Add(res); err != nil {
			t.Fatal(err)
		}
	}
	took, ok, err := h.Took("power-off-worker", "lab", "compressed")
	if err != nil || !ok || took != 20*time.Second {
		t.Errorf("took %s (known %v, %v), want the median 20s of the three passing compressed runs", took, ok, err)
	}
}

// TestHistorySkipsUnreadableLines: a run killed as it wrote its record
// leaves a torn line, and a hostile or broken writer a line past 64 KB.
// Each is one record lost, said once, not every later run of the
// scenario failing (before, every later run --history exited 3 after
// passing, with no result written).
func TestHistorySkipsUnreadableLines(t *testing.T) {
	t.Parallel()
	h, err := OpenHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	h.Warn = func(s string) { warned = append(warned, s) }
	for _, secs := range []float64{10, 30} {
		res := runTook(engine.Pass, "compressed", 1)
		res.StartedAt = res.FinishedAt.Add(-time.Duration(secs * float64(time.Second)))
		if err := h.Add(res); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(h.file("power-off-worker"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	huge := `{"provider":"lab","x":"` + strings.Repeat("a", 200<<10) + `"}`
	if _, err := f.WriteString(huge + "\n" + `{"finishedAt":"2026-11-28T10:0`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	took, ok, err := h.Took("power-off-worker", "lab", "compressed")
	if err != nil || !ok || took != 10*time.Second {
		t.Errorf("took %s (known %v, %v), want the median of the two whole records, 10s", took, ok, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "2 unreadable line(s) skipped (the first: line 3)") {
		t.Errorf("warnings %q", warned)
	}
	res := runTook(engine.Pass, "compressed", 1)
	if err := h.Add(res); err != nil {
		t.Errorf("a record after the torn line: %v", err)
	}
}

// TestReadResultRefusesNonRegular: report, compare and history read
// result.json files under folders a user names; one that is a FIFO, or a
// link to /dev/zero, is refused at once, naming it, instead of holding
// the command (a FIFO) or reading until memory runs out (/dev/zero).
func TestReadResultRefusesNonRegular(t *testing.T) {
	t.Parallel()
	fifo, zero := t.TempDir(), t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, ResultFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(zero, ResultFile)); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{fifo, zero} {
		start := time.Now()
		_, err := ReadResult(dir)
		if !errors.Is(err, regularfile.ErrNotRegular) || !strings.Contains(err.Error(), filepath.Join(dir, ResultFile)) {
			t.Errorf("%s: %v, want it refused as not a regular file, naming it", dir, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: held %s", dir, d)
		}
	}
}

// TestHistorySeparatesSets: a run with --set overrides is kept apart from
// the plain runs, with the runs changed the same way, whatever the order
// the overrides were given in.
func TestHistorySeparatesSets(t *testing.T) {
	h, err := OpenHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := runTook(engine.Pass, "compressed", 10)
	set := func(secs float64, sets map[string]string) *engine.Result {
		r := runTook(engine.Pass, "compressed", secs)
		r.Run = &engine.RunInfo{Sets: sets}
		return r
	}
	a := set(30, map[string]string{"budget.unhealthy": "1m", "unhealthyTimeout": "15s"})
	b := set(31, map[string]string{"unhealthyTimeout": "15s", "budget.unhealthy": "1m"})
	for _, r := range []*engine.Result{plain, a, b, set(40, map[string]string{"unhealthyTimeout": "20s"})} {
		if err := h.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if HistoryName(a) != HistoryName(b) || HistoryName(a) == HistoryName(plain) || !strings.HasPrefix(HistoryName(a), "power-off-worker@") {
		t.Fatalf("names %q, %q, %q", HistoryName(plain), HistoryName(a), HistoryName(b))
	}
	for name, want := range map[string]int{HistoryName(plain): 1, HistoryName(a): 2} {
		stats, err := h.Stats(name, "lab", "compressed")
		if err != nil {
			t.Fatal(err)
		}
		if got := stats["machine-unhealthy"].Runs; got != want {
			t.Errorf("%s: %d runs, want %d", name, got, want)
		}
	}
}
