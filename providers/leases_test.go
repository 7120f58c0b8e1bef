package providers

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestHolderGone: a holder of this host whose process ended is gone; this
// process, and a holder of another host, are not.
func TestHolderGone(t *testing.T) {
	if HolderGone(Holder("s", "/j")) {
		t.Error("this process's holder is gone")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if !HolderGone(fmt.Sprintf("faultline pid %d on %s, scenario s, journal /j", cmd.Process.Pid, host)) {
		t.Error("the holder of an ended process is not gone")
	}
	if HolderGone(fmt.Sprintf("faultline pid %d on another-host, scenario s, journal /j", cmd.Process.Pid)) {
		t.Error("another host's holder is gone")
	}
	if HolderGone("someone else") {
		t.Error("words not faultline's are a gone holder")
	}
}
