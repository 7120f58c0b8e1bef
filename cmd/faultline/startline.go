package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// startLine shows a lab's start as it goes: on a terminal, one live line
// with the time so far and the status, redrawn as it changes and erased
// before any other line; in a log, a line per change at most every
// startEvery. It is the Out and the Status of the session's Config.
type startLine struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	width   func() int
	started time.Time
	drawn   bool
	printed time.Time
}

// startEvery is how often a log gets a line of a lab's start at most.
const startEvery = 15 * time.Second

func newStartLine(w io.Writer) *startLine {
	s := &startLine{w: w, started: time.Now()}
	s.tty, s.width = terminal(w)
	return s
}

// Write writes a line for people, erasing the live line first.
func (s *startLine) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drawn {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.drawn = false
	}
	return s.w.Write(b)
}

// status shows the lab's status: its first part, the Machines running,
// without the pending ones' details.
func (s *startLine) status(st string) {
	if i := strings.Index(st, "; pending: "); i >= 0 {
		st = st[:i]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	line := fmt.Sprintf("[%s] lab: %s", time.Since(s.started).Round(time.Second), st)
	if s.tty {
		fmt.Fprint(s.w, "\r\x1b[K"+fit(line, s.width()-1))
		s.drawn = true
		return
	}
	if time.Since(s.printed) >= startEvery {
		fmt.Fprintln(s.w, line)
		s.printed = time.Now()
	}
}
