package artifacts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/artifacts/browsertest"
)

// TestIntegrationReportInBrowser renders a failed run's report in headless
// chromium: no console message (the report runs no script, so any is an
// error), and the chart's bars are drawn: the fault's, the reached
// phase's and the missed phase's, each about its expected size.
func TestIntegrationReportInBrowser(t *testing.T) {
	browser := browsertest.Chromium(t)
	var b bytes.Buffer
	if err := WriteReport(&b, failedRun(), []string{"dumps/machines.yaml"}, nil); err != nil {
		t.Fatal(err)
	}
	img := browsertest.Page(t, browser, b.Bytes())
	// Bars are 16 px high; on a 660 px axis of 45 s (the run's) the fault
	// runs 39 s (572 px), node-not-ready 2.2 s (32 px), machine-unhealthy's
	// budget 30 s (440 px).
	for name, c := range map[string]struct {
		rgb      uint32
		min, max int
	}{
		"fault":    {0x5c6bc0, 572 * 16 * 8 / 10, 572 * 16 * 12 / 10},
		"reached":  {0x43a047, 32 * 16 * 7 / 10, 32 * 16 * 13 / 10},
		"missed":   {0xe53935, 440 * 16 * 8 / 10, 440 * 16 * 12 / 10},
		"verdict":  {0xc62828, 100, 5000},
		"no-other": {0x00ff00, 0, 0},
	} {
		if n := browsertest.Pixels(img, c.rgb); n < c.min || n > c.max {
			t.Errorf("%s: %d pixels of #%06x, want %d to %d", name, n, c.rgb, c.min, c.max)
		}
	}

	// The console check can fail: a page whose script the same policy
	// blocks is reported.
	bad := filepath.Join(t.TempDir(), "bad.html")
	html := strings.Replace(b.String(), "</body>", "<script>document.title = 'x'</script></body>", 1)
	if err := os.WriteFile(bad, []byte(html), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, console := browsertest.Screenshot(t, browser, bad); len(console) == 0 {
		t.Error("a blocked script left no console message: the check above would not see errors")
	}
}

// TestIntegrationTrendInBrowser renders a passing run's report with a
// phase's history in headless chromium: the trend's P50-P95 band, this
// run's dot and the limit and failed run (red) are drawn.
func TestIntegrationTrendInBrowser(t *testing.T) {
	browser := browsertest.Chromium(t)
	res := failedRun()
	res.Verdict, res.Reason = "pass", ""
	for i := range res.Phases {
		res.Phases[i].OK = true
	}
	stats := map[string]PhaseStats{"node-not-ready": {Phase: "node-not-ready", Runs: 5, Failed: 1, P50: 2.0, P95: 3.0, Last: 2.5, Points: []Point{
		{Verdict: "pass", Reached: true, Seconds: 1.8}, {Verdict: "pass", Reached: true, Seconds: 2.0}, {Verdict: "fail"},
		{Verdict: "pass", Reached: true, Seconds: 3.0}, {Verdict: "pass", Reached: true, Seconds: 2.2}, {Verdict: "pass", Reached: true, Seconds: 2.5}}}}
	var b bytes.Buffer
	if err := WriteReport(&b, res, nil, stats); err != nil {
		t.Fatal(err)
	}
	img := browsertest.Page(t, browser, b.Bytes())
	for name, c := range map[string]struct {
		rgb uint32
		min int
	}{"band": {0xc8e6c9, 100}, "this run": {0x1565c0, 10}, "limit and failed run": {0xc62828, 10}} {
		if n := browsertest.Pixels(img, c.rgb); n < c.min {
			t.Errorf("%s: %d pixels of #%06x, want at least %d", name, n, c.rgb, c.min)
		}
	}
}

// TestIntegrationHistoryPageInBrowser renders a history page in headless
// chromium: each phase's trend has its axes (#999) and its labels, the
// seconds and the first and last run's dates.
func TestIntegrationHistoryPageInBrowser(t *testing.T) {
	browser := browsertest.Chromium(t)
	day := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	var points []Point
	for i := range 6 {
		points = append(points, Point{At: day.AddDate(0, 0, i), Verdict: "pass", Reached: true, Seconds: 10 + float64(i)})
	}
	trends := []ScenarioTrend{{Scenario: "power-off-worker", Phases: map[string]PhaseStats{
		"replacement-running": {Phase: "replacement-running", Runs: 6, P50: 12.5, P95: 15, Last: 15, Points: points}}}}
	var b bytes.Buffer
	if err := WriteHistoryPage(&b, "nightly", trends); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">2026-12-01</text>", ">2026-12-06</text>", ">0s</text>", `<line class="axis"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("history page lacks %q", want)
		}
	}
	img := browsertest.Page(t, browser, b.Bytes())
	if n := browsertest.Pixels(img, 0x999999); n < 300 {
		t.Errorf("axes: %d pixels of #999999, want at least 300", n)
	}
}
