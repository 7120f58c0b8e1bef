package leftovers_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/providers/lab/leftovers"
)

// What a lab's parts made in $TMPDIR is removed with the lab's folder,
// and nothing else its record may have been edited to name: a folder not
// right under $TMPDIR, one of another name, a link.
func TestRemove(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	lab := filepath.Join(tmp, "faultline-lab-1")
	mk := func(path string) string {
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mk(lab)
	home := mk(filepath.Join(tmp, "govcsim-2071"))
	certs := mk(filepath.Join(tmp, "envtest-serving-certs-88"))
	if err := os.WriteFile(filepath.Join(certs, "tls.key"), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := leftovers.Note(lab, home, certs); err != nil {
		t.Fatal(err)
	}
	if err := leftovers.Note(lab, mk(filepath.Join(tmp, "home"))); err == nil {
		t.Error("Note took a folder of another name")
	}
	keep := mk(filepath.Join(tmp, "keep"))
	link := filepath.Join(tmp, "govcsim-link")
	if err := os.Symlink(keep, link); err != nil {
		t.Fatal(err)
	}
	deep := mk(filepath.Join(keep, "govcsim-deep"))
	// An edited record.
	f, err := os.OpenFile(filepath.Join(lab, "outside"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join([]string{link, deep, keep, "relative/govcsim-x", filepath.Join(tmp, "govcsim-gone")}, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var said []string
	if err := leftovers.Remove(lab, func(s string) { said = append(said, s) }); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{home, certs} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", gone, err)
		}
	}
	for _, kept := range []string{link, deep, keep} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
		}
	}
	if len(said) != 6 {
		t.Errorf("said %d lines, want 2 removed and 4 left:\n%s", len(said), strings.Join(said, "\n"))
	}
}
