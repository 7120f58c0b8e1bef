package artifacts

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's chromium (hack/chromium.sh installs it). With
// FAULTLINE_REQUIRE_BROWSER set, as CI sets it, a missing browser fails
// the test instead of skipping it.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs chromium")
	}
	if p := os.Getenv("FAULTLINE_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("FAULTLINE_REQUIRE_BROWSER") != "" {
			t.Fatalf("chromium not found (run hack/chromium.sh): %v", err)
		}
		t.Skip("chromium not found; hack/chromium.sh installs it")
	}
	return p
}

// screenshot renders page in headless chromium and returns the PNG and
// the console messages. The browser resolves no host name and reaches
// nothing but the file.
func screenshot(t *testing.T, browser, page string) (image.Image, []string) {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--no-default-browser-check", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--window-size=1000,1400", "--screenshot="+shot, "file://"+page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	var console []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr.String())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img, console
}

// pixels counts the pixels of img within 12 of the colour #rrggbb.
func pixels(img image.Image, rgb uint32) int {
	want := [3]int{int(rgb >> 16 & 0xff), int(rgb >> 8 & 0xff), int(rgb & 0xff)}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			got := [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
			near := true
			for i := range got {
				if d := got[i] - want[i]; d > 12 || d < -12 {
					near = false
				}
			}
			if near {
				n++
			}
		}
	}
	return n
}

// TestIntegrationReportInBrowser renders a failed run's report in headless
// chromium: no console message (the report runs no script, so any is an
// error), and the chart's bars are drawn: the fault's, the reached
// phase's and the missed phase's, each about its expected size.
func TestIntegrationReportInBrowser(t *testing.T) {
	browser := chromium(t)
	page := filepath.Join(t.TempDir(), ReportFile)
	var b bytes.Buffer
	if err := WriteReport(&b, failedRun(), []string{"dumps/machines.yaml"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	img, console := screenshot(t, browser, page)
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
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
		if n := pixels(img, c.rgb); n < c.min || n > c.max {
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
	if _, console := screenshot(t, browser, bad); len(console) == 0 {
		t.Error("a blocked script left no console message: the check above would not see errors")
	}
}
