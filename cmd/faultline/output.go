package main

import (
	"fmt"
	"io"
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
	return &progressPrinter{w: w, at: map[string]time.Time{}, every: 5 * time.Second}
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
