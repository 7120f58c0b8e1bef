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
// and its assertions.
func MarkdownSummary(results []*engine.Result) string {
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
		fmt.Fprintf(&b, "\n### %s on %s\n\n| | phase or assertion | when | budget |\n|---|---|---|---|\n", cell(res.Scenario), cell(res.Provider))
		for _, p := range res.Phases {
			when := "not reached"
			if p.SinceAnchor != nil {
				when = fmt.Sprintf("%s after %s", p.SinceAnchor.Round(time.Millisecond), p.From)
			}
			budget := ""
			if p.Budget != nil {
				budget = p.Budget.String()
			}
			fmt.Fprintf(&b, "| %s | phase %s | %s | %s |\n", okMark(p.OK), cell(p.Name), cell(when), budget)
		}
		for _, a := range res.Assertions {
			fmt.Fprintf(&b, "| %s | assertion %s | %s | |\n", okMark(a.OK), cell(a.Name), cell(a.Message))
		}
		for _, w := range res.Workloads {
			for _, m := range w.Measures {
				fmt.Fprintf(&b, "| | workload %s, %s | %s |  |\n", cell(w.Name), m.Of, cell(WorkloadLine(m)))
			}
		}
	}
	return b.String()
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
