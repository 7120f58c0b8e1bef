package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/artifacts"
)

// TestRunRefusesPlantedLinks: someone who can write the artifacts folder
// plants a symbolic link where the run writes its journal or its
// timeline. The run refuses before it injects anything, naming the file,
// and what the link points at is left whole. Before, the journal's link
// was followed: the file it pointed at was appended to (a journal.jsonl
// link truncated the target through the other writers).
func TestRunRefusesPlantedLinks(t *testing.T) {
	t.Parallel()
	u := vcsimURL(t)
	for _, file := range []string{artifacts.JournalFile, artifacts.TimelineFile} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "precious")
			if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, file)); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			code := execute([]string{"run", "vm-power-cycle", "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--vcenter-insecure",
				"--vcenter-url", u, "--artifacts", dir}, &out, &errOut)
			if code == exitPass || !strings.Contains(errOut.String(), "symbolic link") || !strings.Contains(errOut.String(), file) {
				t.Errorf("exit %d, stderr %q: want a refusal naming %s as a symbolic link", code, errOut.String(), file)
			}
			if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
				t.Errorf("the link's target now holds %q", b)
			}
			if strings.Contains(out.String(), "injected") {
				t.Errorf("a fault was injected:\n%s", out.String())
			}
		})
	}
}
