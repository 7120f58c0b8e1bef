package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
)

// printResult writes the human summary of a run.
func printResult(w io.Writer, res *engine.Result) {
	on := res.Provider
	if res.Profile != "" {
		on += " (" + res.Profile + " time profile)"
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

// progressPrinter prints what the runner waits for, at most every few
// seconds for each thing waited for.
type progressPrinter struct {
	mu    sync.Mutex
	w     io.Writer
	at    map[string]time.Time // last line printed per thing waited for
	every time.Duration
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	// A CI log (not a terminal) gets a heartbeat at most every 30 s.
	every := 5 * time.Second
	if f, ok := w.(*os.File); !ok || !isTerminal(f) {
		every = 30 * time.Second
	}
	return &progressPrinter{w: w, at: map[string]time.Time{}, every: every}
}

// isTerminal tells whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}

// print prints one line per thing waited for every few seconds; phases of
// one step are waited for together, each with its own line.
func (p *progressPrinter) print(pr engine.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
