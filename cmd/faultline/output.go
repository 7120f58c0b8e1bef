package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"golang.org/x/term"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
)

// printResult writes the human summary of a run.
func printResult(w io.Writer, res *engine.Result) {
	on := res.Provider
	if res.Profile != "" {
		on += " (" + res.Profile + " time profile"
		if r := res.Release; r != nil {
			on += ", release " + r.Path()
			if r.Untested != "" {
				on += ", an untested pair"
			}
		}
		on += ")"
	}
	fmt.Fprintf(w, "scenario %s on %s: %s", res.Scenario, on, strings.ToUpper(string(res.Verdict)))
	if res.Reason != "" {
		fmt.Fprintf(w, " (%s)", res.Reason)
	}
	fmt.Fprintf(w, " in %s\n", res.FinishedAt.Sub(res.StartedAt).Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, t := range res.Targets {
		seed := ""
		if t.Seed != nil {
			seed = fmt.Sprintf(" (random, seed %d)", *t.Seed)
		}
		fmt.Fprintf(tw, "  target\t%s\t%s%s\n", t.Name, strings.Join(t.Objects, ", "), seed)
	}
	for _, f := range res.Planned {
		fmt.Fprintf(tw, "  would inject\t%s\t%s on %s\n", f.Step, f.Fault, strings.Join(f.Objects, ", "))
	}
	for _, p := range res.Phases {
		budget := "no budget"
		if p.Budget != nil {
			budget = "budget " + p.Budget.String()
		}
		switch {
		case p.ObservedAt == nil:
			fmt.Fprintf(tw, "  phase\t%s\tNOT REACHED\t%s\t%s\n", p.Name, budget, p.Message)
		default:
			fmt.Fprintf(tw, "  phase\t%s\t%s after %s\t%s\t%s\n", p.Name, p.SinceAnchor.Round(time.Millisecond), p.From, budget, okString(p.OK))
		}
	}
	for _, a := range res.Assertions {
		fmt.Fprintf(tw, "  assert\t%s\t%s\t%s\n", a.Name, okString(a.OK), a.Message)
	}
	for _, w := range res.Workloads {
		for _, m := range w.Measures {
			fmt.Fprintf(tw, "  workload\t%s %s\t%s\n", w.Name, m.Of, artifacts.WorkloadLine(m))
		}
	}
	for _, f := range res.Faults {
		fmt.Fprintf(tw, "  fault\t%s\t%s\tinjected %s\tundone %s\n", f.ID, f.Kind, stamp(f.InjectedAt), undone(f))
	}
	tw.Flush()
}

func okString(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format("15:04:05.000")
}

func undone(f engine.FaultResult) string {
	switch {
	case f.UndoneAt != nil:
		return stamp(f.UndoneAt)
	case f.Undo == engine.UndoNone:
		return "never (" + f.Note + ")"
	case f.Result != "":
		return "no (" + f.Result + ")"
	}
	return "no"
}

// progressPrinter prints a run's progress: a line for each fault injected
// or undone and each phase reached or missed, and what the runner waits
// for. On a terminal that is one live status line, redrawn in place (the
// time elapsed, each wait against its budget); in a log it is a heartbeat
// line per wait at most every 30 s.
type progressPrinter struct {
	mu    sync.Mutex
	w     io.Writer
	at    map[string]time.Time // last line printed per thing waited for
	every time.Duration
	// tty: w is a terminal, and gets the live line.
	tty     bool
	started time.Time
	live    map[string]liveWait // what is waited for now, by name
	drawn   time.Time           // when the live line was last drawn; zero when none is on screen
	// waits counts the waits seen, to keep them in the order the
	// scenario has them.
	waits int
	// width is the terminal's width now (80 when it cannot be read).
	width func() int
}

// liveWait is one wait on the live line.
type liveWait struct {
	elapsed, budget time.Duration
	seen            time.Time
	order           int
}

// liveRedraw is how often the live line is redrawn at most; liveStale is
// how long a wait stays on it after its last report.
const (
	liveRedraw = 250 * time.Millisecond
	liveStale  = 2 * time.Second
)

func newProgressPrinter(w io.Writer) *progressPrinter {
	tty, width := terminal(w)
	p := newProgress(w, tty)
	p.width = width
	return p
}

func newProgress(w io.Writer, tty bool) *progressPrinter {
	// A CI log (not a terminal) gets a heartbeat at most every 30 s.
	return &progressPrinter{w: w, at: map[string]time.Time{}, every: 30 * time.Second, tty: tty, started: time.Now(), live: map[string]liveWait{},
		width: func() int { return defaultWidth }}
}

// defaultWidth is the width of a terminal whose size cannot be read.
const defaultWidth = 80

// terminal tells whether w is a terminal, and how wide it is when asked
// (its width now, as it may be resized; defaultWidth when it cannot be
// read or w is no terminal).
func terminal(w io.Writer) (bool, func() int) {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return false, func() int { return defaultWidth }
	}
	return true, func() int {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
		return defaultWidth
	}
}

// fit cuts line to width columns (runes), ending it with "..." when cut.
func fit(line string, width int) string {
	r := []rune(line)
	if len(r) <= width || width < 4 {
		return line
	}
	return string(r[:width-3]) + "..."
}

// isTerminal tells whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// clearLive erases the live line, if one is on screen.
func (p *progressPrinter) clearLive() {
	if !p.drawn.IsZero() {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = time.Time{}
	}
}

// drawLive draws the live line: the time since the run began, then each
// current wait with its elapsed time against its budget.
func (p *progressPrinter) drawLive(now time.Time) {
	var parts []string
	names := slices.SortedFunc(maps.Keys(p.live), func(a, b string) int { return p.live[a].order - p.live[b].order })
	for _, name := range names {
		lw := p.live[name]
		if now.Sub(lw.seen) > liveStale {
			delete(p.live, name)
			continue
		}
		budget := ""
		if lw.budget > 0 {
			budget = "/" + lw.budget.String()
		}
		parts = append(parts, fmt.Sprintf("%s %s%s", name, lw.elapsed.Round(time.Second), budget))
	}
	line := fmt.Sprintf("[%s] ", now.Sub(p.started).Round(time.Second))
	if len(parts) == 0 {
		line += "running"
	} else {
		line += "waiting for " + strings.Join(parts, ", ")
	}
	// One column short of the width: a line that fills it wraps on some
	// terminals, and "\r" then redraws only its second row.
	fmt.Fprint(p.w, "\r\x1b[K"+fit(line, p.width()-1))
	p.drawn = now
}

// say prints a line for people above the live line.
func (p *progressPrinter) say(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLive()
	fmt.Fprint(p.w, line)
}

// done erases the live line at the end of the run.
func (p *progressPrinter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLive()
}

// event prints a line for each fault injected or undone and each phase
// reached or missed, with its time since the first injection.
func (p *progressPrinter) event(e engine.Event) {
	at := ""
	if e.SinceInject != nil {
		at = " at +" + e.SinceInject.Round(100*time.Millisecond).String()
	}
	var line string
	switch e.What {
	case "fault-injected":
		line = fmt.Sprintf("injected %s on %s%s", e.Details["fault"], e.Object, at)
	case "fault-undone":
		line = fmt.Sprintf("undone %s (%s)%s", e.Details["id"], e.Details["undo"], at)
		if note := e.Details["note"]; note != "" {
			line = fmt.Sprintf("undone %s%s: %s", e.Details["id"], at, note)
		}
	case "vm-powered-on":
		line = fmt.Sprintf("%s powered on again%s, %s", e.Object, at, e.Details["by"])
	case "undo-cut":
		line = fmt.Sprintf("undo of %s cut short (%s)%s: the clean-up undoes it", e.Details["id"], e.Details["cut"], at)
	case "undo-failed":
		line = fmt.Sprintf("undo of %s FAILED%s: %s", e.Details["id"], at, e.Details["error"])
	case "phase-reached":
		budget := ""
		if b := e.Details["budget"]; b != "" {
			budget = ", budget " + b
		}
		since := e.Details["sinceAnchor"]
		if d, err := time.ParseDuration(since); err == nil {
			since = d.Round(time.Millisecond).String()
		}
		line = fmt.Sprintf("%s reached %s after %s%s", e.Object, since, e.Details["from"], budget)
	case "phase-missed":
		line = fmt.Sprintf("%s MISSED%s: %s", e.Object, at, e.Details["message"])
	case "phase-cut":
		line = fmt.Sprintf("%s %s", e.Object, e.Details["message"])
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.HasPrefix(e.What, "phase-") {
		// Reached, missed or cut: no longer waited for.
		delete(p.live, strings.Replace(e.Object, "/", " ", 1))
	}
	p.clearLive()
	fmt.Fprintln(p.w, line)
	if p.tty {
		p.drawLive(time.Now())
	}
}

// print shows what the runner waits for: on the live line, or in a log
// one line per thing waited for at most every 30 s (phases of one step
// are waited for together, each with its own line).
func (p *progressPrinter) print(pr engine.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		now := time.Now()
		lw, ok := p.live[pr.Waiting]
		if !ok {
			p.waits++
			lw.order = p.waits
		}
		lw.elapsed, lw.budget, lw.seen = pr.Elapsed, pr.Budget, now
		p.live[pr.Waiting] = lw
		if now.Sub(p.drawn) >= liveRedraw {
			p.drawLive(now)
		}
		return
	}
	if at, ok := p.at[pr.Waiting]; ok && time.Since(at) < p.every {
		return
	}
	p.at[pr.Waiting] = time.Now()
	budget := "no budget"
	if pr.Budget > 0 {
		budget = "budget " + pr.Budget.String()
	}
	fmt.Fprintf(p.w, "waiting for %s: %s elapsed, %s\n", pr.Waiting, pr.Elapsed.Round(100*time.Millisecond), budget)
}

func newLogger(w io.Writer, verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(w, strings.TrimSpace(prefix+" "+args))
	}, funcr.Options{Verbosity: verbosity})
}

// warnTo is a warning's line on w: something skipped that the command
// goes on without.
func warnTo(w io.Writer) func(string) {
	return func(s string) { fmt.Fprintln(w, "faultline: warning:", s) }
}
