package artifacts

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
)

// EnvStepSummary is the file GitHub Actions shows as a job's summary; a
// run appends its Markdown summary to it when it is set.
const EnvStepSummary = "GITHUB_STEP_SUMMARY"

// MarkdownSummary is the runs as Markdown, for a CI job's page: a line per
// scenario with its verdict, then each run's phases against their budgets
// and its assertions; with history (nil for none), each phase's P50, P95
// and change against the last passing run before this one.
func MarkdownSummary(results []*engine.Result, history *History) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "## faultline: %d of %d scenarios passed\n\n", Passed(results), len(results))
	b.WriteString("| scenario | verdict | took | reason |\n|---|---|---|---|\n")
	for _, res := range results {
		fmt.Fprintf(&b, "| %s | %s %s | %s | %s |\n", cell(res.Scenario), verdictMark(res.Verdict), res.Verdict,
			res.FinishedAt.Sub(res.StartedAt).Round(100*time.Millisecond), cell(res.Reason))
	}
	for _, res := range results {
		if len(res.Phases) == 0 && len(res.Assertions) == 0 {
			continue
		}
		var stats map[string]PhaseStats
		if history != nil {
			var err error
			if stats, err = history.StatsBefore(HistoryName(res), res.Provider, res.Profile, res.FinishedAt); err != nil {
				return "", err
			}
		}
		fmt.Fprintf(&b, "\n### %s on %s\n\n| | phase or assertion | when | budget |%s\n|---|---|---|---|%s\n", cell(res.Scenario), cell(res.Provider),
			ifHistory(stats, " history |"), ifHistory(stats, "---|"))
		for _, p := range res.Phases {
			when := "not reached"
			if p.SinceAnchor != nil {
				when = fmt.Sprintf("%s after %s", p.SinceAnchor.Round(time.Millisecond), p.From)
			}
			budget := ""
			if p.Budget != nil {
				budget = p.Budget.String()
			}
			fmt.Fprintf(&b, "| %s | phase %s | %s | %s |%s\n", okMark(p.OK), cell(p.Name), cell(when), budget, ifHistory(stats, " "+cell(historyLine(stats, p))+" |"))
		}
		for _, a := range res.Assertions {
			fmt.Fprintf(&b, "| %s | assertion %s | %s | |%s\n", okMark(a.OK), cell(a.Name), cell(a.Message), ifHistory(stats, " |"))
		}
		for _, w := range res.Workloads {
			for _, m := range w.Measures {
				fmt.Fprintf(&b, "| | workload %s, %s | %s |  |%s\n", cell(w.Name), m.Of, cell(WorkloadLine(m)), ifHistory(stats, " |"))
			}
		}
	}
	return b.String(), nil
}

// ifHistory is s when there is history to show, else nothing.
func ifHistory(stats map[string]PhaseStats, s string) string {
	if stats == nil {
		return ""
	}
	return s
}

// historyLine is a phase's history in one line: P50, P95, and this run's
// change against the last passing run.
func historyLine(stats map[string]PhaseStats, p engine.PhaseResult) string {
	s, ok := stats[p.Name]
	if !ok || s.Runs == 0 {
		return "-"
	}
	line := fmt.Sprintf("P50 %.1fs, P95 %.1fs", s.P50, s.P95)
	if p.SinceAnchor != nil && p.OK {
		line += fmt.Sprintf(", %+.1fs on the last", p.SinceAnchor.Seconds()-s.Last)
	}
	line += fmt.Sprintf(" (%d runs", s.Runs)
	if s.Failed > 0 {
		line += fmt.Sprintf(", %d failed left out", s.Failed)
	}
	return line + ")"
}

// WorkloadLine says in one line what a workload's measure felt.
func WorkloadLine(m engine.MeasureResult) string {
	s := fmt.Sprintf("%d gap(s), %s down in all, longest %s (%d of %d samples failed", len(m.Gaps), m.Total.Round(time.Millisecond), m.Longest.Round(time.Millisecond), m.Failed, m.Samples)
	if m.Retried > 0 {
		s += fmt.Sprintf(", %d good only on their retry", m.Retried)
	}
	if m.Unreadable > 0 {
		s += fmt.Sprintf(", %d unreadable", m.Unreadable)
	}
	return s + ")"
}

// Passed counts the runs that passed.
func Passed(results []*engine.Result) int {
	n := 0
	for _, res := range results {
		if res.Verdict == engine.Pass {
			n++
		}
	}
	return n
}

func verdictMark(v engine.Verdict) string {
	switch v {
	case engine.Pass:
		return "✅"
	case engine.Skipped:
		return "⏭️"
	}
	return "❌"
}

func okMark(ok bool) string {
	if ok {
		return "✅"
	}
	return "❌"
}

// cell is s fit for a Markdown table cell: one line, pipes escaped.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", `\|`)
}
