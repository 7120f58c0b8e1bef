package scorecard

import (
	"bytes"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/artifacts/browsertest"
	"github.com/faultline-dev/faultline/framework/engine"
)

// TestIntegrationScorecardInBrowser renders a scorecard with a slower
// phase in headless chromium: no console message, both sides' runs drawn
// as dots in their colours (about 3 phases x 4 runs of each, the rank
// test's minimum), and the
// regression shown in red.
func TestIntegrationScorecardInBrowser(t *testing.T) {
	browser := browsertest.Chromium(t)
	base := runs("power-off-worker", "v1.12", MinRuns, engine.Pass, map[string]time.Duration{"node-not-ready": 2 * time.Second, "machine-unhealthy": 3 * time.Second, "replacement-running": 10 * time.Second})
	target := runs("power-off-worker", "v1.13", MinRuns, engine.Pass, map[string]time.Duration{"node-not-ready": 2 * time.Second, "machine-unhealthy": 18 * time.Second, "replacement-running": 10 * time.Second})
	var b bytes.Buffer
	if err := Compare("v1.12", base, "v1.13", target, DefaultTolerance).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	img := browsertest.Page(t, browser, b.Bytes())
	// A dot is a circle of radius 4 at 60 % opacity over white: about 50
	// pixels of its blended colour (dots of one phase may overlap).
	for name, c := range map[string]struct {
		rgb      uint32
		min, max int
	}{
		"base dots":   {0x79add2, 100, 3 * MinRuns * 80},
		"target dots": {0xffb26e, 100, 3 * MinRuns * 80},
		"regression":  {0xb00020, 50, 5000},
	} {
		if n := browsertest.Pixels(img, c.rgb); n < c.min || n > c.max {
			t.Errorf("%s: %d pixels of #%06x, want %d to %d", name, n, c.rgb, c.min, c.max)
		}
	}
}
