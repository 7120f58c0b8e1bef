package management

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestKillStarted kills the process its record names, and nothing when
// there is no record or the recorded process is gone.
func TestKillStarted(t *testing.T) {
	link := filepath.Join(t.TempDir(), "kube-apiserver")
	if err := killStarted(link); err != nil {
		t.Fatalf("no record: %v", err)
	}

	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	start, err := ProcessStart(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	record := fmt.Sprintf("%d %d\n", cmd.Process.Pid, start)
	if err := os.WriteFile(link+pidSuffix, []byte(record), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := killStarted(link); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the recorded process ended with %v, want SIGKILL", err)
	}
	if err := killStarted(link); err != nil {
		t.Fatalf("the recorded process is gone: %v", err)
	}
}
