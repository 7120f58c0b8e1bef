package artifacts

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
)

// The Markdown summary has a line per run and each run's phases against
// their budgets; a cell never breaks the table.
func TestMarkdownSummary(t *testing.T) {
	failed := failedRun()
	failed.Reason = "phase a | b\nnot reached"
	md, err := MarkdownSummary([]*engine.Result{failed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## faultline: 0 of 1 scenarios passed",
		"| " + failed.Scenario + " | ❌ fail |",
		`phase a \| b not reached |`,
		"| ✅ | phase node-not-ready | 2.2s after inject | 1m0s |",
		"| ❌ | phase machine-unhealthy | not reached | 30s |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
}
