// Package browsertest renders the HTML faultline writes in a real browser,
// Debian's headless chromium, for tests: a screenshot to count the pixels
// of a colour in, and the console's messages.
package browsertest

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

// Chromium finds Debian's chromium (hack/chromium.sh installs it). With
// FAULTLINE_REQUIRE_BROWSER set, as CI sets it, a missing browser fails
// the test instead of skipping it.
func Chromium(t testing.TB) string {
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

// Screenshot renders page in headless chromium and returns the PNG and
// the console messages. The browser resolves no host name and reaches
// nothing but the file.
func Screenshot(t testing.TB, browser, page string) (image.Image, []string) {
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

// Page renders html in headless chromium and returns the screenshot,
// failing t on any console message (the pages faultline writes run no
// script, so any is an error).
func Page(t testing.TB, browser string, html []byte) image.Image {
	t.Helper()
	page := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(page, html, 0o600); err != nil {
		t.Fatal(err)
	}
	img, console := Screenshot(t, browser, page)
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	return img
}

// Pixels counts the pixels of img within 12 of the colour #rrggbb.
func Pixels(img image.Image, rgb uint32) int {
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
