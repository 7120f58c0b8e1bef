package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// On a log (not a terminal) a run says, once each and in order, when its
// fault went in, when each phase was reached with its time and budget,
// and when the fault was undone.
func TestProgressLines(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a scenario on an in-process vcsim")
	}
	var out, errOut bytes.Buffer
	if code := execute([]string{"run", "vm-power-cycle", "--artifacts", t.TempDir()}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^injected vm\.power-off on VirtualMachine/DC0_H0_VM0 at \+[0-9.]+m?s$`),
		regexp.MustCompile(`(?m)^phase/vm-off reached [0-9.]+[mµn]?s after inject, budget 30s$`),
		regexp.MustCompile(`(?m)^undone power-off/DC0_H0_VM0 \(vm\.power-on\) at \+[0-9.]+m?s$`),
		regexp.MustCompile(`(?m)^phase/vm-on reached [0-9.]+[mµn]?s after undo:power-on, budget 30s$`),
	}
	log := errOut.String()
	last := -1
	for _, re := range want {
		all := re.FindAllStringIndex(log, -1)
		if len(all) != 1 {
			t.Errorf("%s appears %d times in:\n%s", re, len(all), log)
			continue
		}
		if all[0][0] < last {
			t.Errorf("%s is out of order in:\n%s", re, log)
		}
		last = all[0][0]
	}
	if strings.Count(log, "waiting for") > 1 {
		t.Errorf("more than one heartbeat in a 3 s run on a log:\n%s", log)
	}
}
