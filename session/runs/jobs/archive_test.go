package jobs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunFolderRoundTrip: a run folder a pod emits into its log, among
// other lines, comes back whole under another folder, and the other lines
// pass through in their order.
func TestRunFolderRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"result.json": `{"verdict":"pass"}`, "dumps/cluster.yaml": strings.Repeat("kind: Machine\n", 500), "timeline.jsonl": ""}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	log.WriteString("[0s] lab: starting\n")
	if err := Emit(&log, src); err != nil {
		t.Fatal(err)
	}
	log.WriteString("PASS power-off-worker\n")
	var out bytes.Buffer
	c := &collector{out: &out}
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		if len(sc.Text()) > 100 {
			t.Fatalf("a log line of %d characters", len(sc.Text()))
		}
		c.line(sc.Text())
	}
	if c.err != nil || c.archive == nil {
		t.Fatalf("archive %d bytes, %v", len(c.archive), c.err)
	}
	if want := "[0s] lab: starting\nPASS power-off-worker\n"; out.String() != want {
		t.Errorf("other lines %q, want %q", out.String(), want)
	}
	dst := t.TempDir()
	if err := extract(c.archive, dst); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != body {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "link")); err == nil {
		t.Error("a symbolic link left the pod")
	}
}

// TestCutLog: a run folder whose log was cut, or whose checksum does not
// match, is not taken.
func TestCutLog(t *testing.T) {
	var log bytes.Buffer
	if err := Emit(&log, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	c := &collector{out: &bytes.Buffer{}}
	for _, l := range lines[:len(lines)-1] {
		c.line(l)
	}
	c.line(archiveEnd + strings.Repeat("0", 64))
	if c.archive != nil || c.err == nil || !strings.Contains(c.err.Error(), "checksum") {
		t.Errorf("a wrong checksum: archive %v, %v", c.archive != nil, c.err)
	}
}

// TestExtractRefusesEscape: an archive naming a file outside the folder,
// or a link, is refused.
func TestExtractRefusesEscape(t *testing.T) {
	for _, hdr := range []*tar.Header{
		{Name: "../escaped", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	} {
		var b bytes.Buffer
		gz := gzip.NewWriter(&b)
		tw := tar.NewWriter(gz)
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			_, _ = tw.Write([]byte("x"))
		}
		_ = tw.Close()
		_ = gz.Close()
		dir := t.TempDir()
		if err := extract(b.Bytes(), filepath.Join(dir, "run")); err == nil {
			t.Errorf("%s extracted", hdr.Name)
		}
		if _, err := os.Stat(filepath.Join(dir, "escaped")); err == nil {
			t.Errorf("%s was written outside the folder", hdr.Name)
		}
	}
}
