package artifacts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	// Bars are 16 px high; on a 660 px axis of 65 s the fault runs 39 s
	// (396 px), node-not-ready 2.2 s (22 px), machine-unhealthy's budget
	// 30 s (305 px).
	for name, c := range map[string]struct {
		rgb      uint32
		min, max int
	}{
		"fault":    {0x5c6bc0, 396 * 16 * 8 / 10, 396 * 16 * 12 / 10},
		"reached":  {0x43a047, 22 * 16 * 7 / 10, 22 * 16 * 13 / 10},
		"missed":   {0xe53935, 305 * 16 * 8 / 10, 305 * 16 * 12 / 10},
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
