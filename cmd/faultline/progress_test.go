package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
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

// On a terminal, what the runner waits for is one status line redrawn in
// place (\r, erase line), erased before each event line and at the end;
// no "waiting for ...:" lines pile up.
func TestProgressLiveLine(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, true)
	p.print(engine.Progress{Waiting: "phase node-not-ready", Elapsed: 2 * time.Second, Budget: 30 * time.Second})
	p.event(engine.Event{What: "fault-injected", Object: "Machine/w-1", Details: map[string]string{"fault": "vm.power-off"}})
	p.done()
	got := out.String()
	for _, want := range []string{
		"\r\x1b[K[0s] waiting for phase node-not-ready 2s/30s",
		"\r\x1b[Kinjected vm.power-off on Machine/w-1\n\r\x1b[K[0s] waiting for phase node-not-ready 2s/30s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%q", want, got)
		}
	}
	if !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("the live line is not erased at the end:\n%q", got)
	}
	if strings.Contains(got, "waiting for phase node-not-ready: ") {
		t.Errorf("a heartbeat line on a terminal:\n%q", got)
	}
}

// The live line keeps the waits in the order they began (the scenario's),
// drops a phase the moment it is reached, and fits the terminal's width.
func TestProgressLiveLineFits(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, true)
	p.width = func() int { return 60 }
	p.print(engine.Progress{Waiting: "phase node-not-ready", Elapsed: time.Second, Budget: 30 * time.Second})
	p.print(engine.Progress{Waiting: "phase machine-deleted", Elapsed: time.Second, Budget: time.Minute})
	p.drawLive(time.Now())
	lines := strings.Split(out.String(), "\r\x1b[K")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "[0s] waiting for phase node-not-ready 1s/30s, phase mach") || len([]rune(last)) != 59 || !strings.HasSuffix(last, "...") {
		t.Errorf("live line %q: want node-not-ready first, cut to 59 columns", last)
	}
	p.event(engine.Event{What: "phase-reached", Object: "phase/node-not-ready", Details: map[string]string{"sinceAnchor": "3s", "from": "inject"}})
	lines = strings.Split(out.String(), "\r\x1b[K")
	if last := lines[len(lines)-1]; last != "[0s] waiting for phase machine-deleted 1s/1m0s" {
		t.Errorf("after node-not-ready was reached the live line is %q", last)
	}
}

// A lab's start: on a terminal one live line of its status, erased before
// the next line; in a log a line per change, at most every startEvery.
func TestStartLine(t *testing.T) {
	var out bytes.Buffer
	s := newStartLine(&out)
	s.tty = true
	s.status("cluster lab: 3 of 5 Machines Running; pending: lab-md-0-x Provisioning")
	if _, err := s.Write([]byte("lab: all Machines Running in 20s\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "\r\x1b[K[0s] lab: cluster lab: 3 of 5 Machines Running\r\x1b[Klab: all Machines Running in 20s\n"; got != want {
		t.Errorf("terminal:\n got %q\nwant %q", got, want)
	}
	out.Reset()
	s = newStartLine(&out)
	s.status("cluster lab: 0 of 5 Machines Running")
	s.status("cluster lab: 1 of 5 Machines Running")
	if got, want := out.String(), "[0s] lab: cluster lab: 0 of 5 Machines Running\n"; got != want {
		t.Errorf("log:\n got %q\nwant %q", got, want)
	}
}
