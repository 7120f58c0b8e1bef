// Package kindtest is what tests that run faultline's own image on a kind
// cluster share: the image, built as a user builds it.
package kindtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// FaultlineImage builds faultline's image with hack/image.sh from the
// checkout at root (offline: no registry, no base image) and returns its
// tag, the script's last line.
func FaultlineImage(ctx context.Context, t testing.TB, root string) string {
	t.Helper()
	build := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "image.sh"))
	build.Dir = root
	out, err := build.Output()
	if err != nil {
		t.Fatalf("hack/image.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
