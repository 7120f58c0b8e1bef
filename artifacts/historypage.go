package artifacts

import (
	"fmt"
	"html/template"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/framework/engine"
)

// Scenarios are the scenarios the history folder has runs of.
func (h *History) Scenarios() ([]string, error) {
	entries, err := os.ReadDir(h.dir)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && !e.IsDir() {
			out = append(out, name)
		}
	}
	return out, nil
}

// ScenarioTrend is one scenario's phases over its runs, for a history page.
type ScenarioTrend struct {
	Scenario string
	Phases   map[string]PhaseStats
}

// Sparkline is a phase's runs as one line of text: a bar for each passing
// run's time (▁ to █, from 0 to the longest), ✗ for each run that failed.
func Sparkline(s PhaseStats) string {
	top := 0.0
	for _, p := range s.Points {
		top = max(top, p.Seconds)
	}
	bars := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, p := range s.Points {
		switch {
		case p.Verdict != engine.Pass || !p.Reached:
			b.WriteRune('✗')
		case top == 0:
			b.WriteRune(bars[0])
		default:
			b.WriteRune(bars[min(len(bars)-1, int(p.Seconds/top*float64(len(bars)-1)+0.5))])
		}
	}
	return b.String()
}

// WriteHistoryPage writes one self-contained page of every scenario's
// phases over their runs: a row per phase with its statistics and trend.
func WriteHistoryPage(w io.Writer, title string, trends []ScenarioTrend) error {
	return historyPage.Execute(w, struct {
		Title  string
		Trends []ScenarioTrend
	}{title, trends})
}

var historyPage = template.Must(template.New("history").Funcs(template.FuncMap{
	"phases": func(m map[string]PhaseStats) []PhaseStats {
		var out []PhaseStats
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, m[k])
		}
		return out
	},
	"cell": func(s PhaseStats) template.HTML { return historyCell(s, nil, historyTrendBox) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>faultline history: {{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
svg.trend rect.band { fill: #c8e6c9; } svg.trend line.limit { stroke: #c62828; stroke-dasharray: 3 2; }
svg.trend line.axis { stroke: #999; } svg.trend text { font-size: 10px; fill: #555; }
svg.trend circle.past { fill: #555; } svg.trend circle.pastrun { fill: none; stroke: #555; stroke-width: 1; } svg.trend path.failed { stroke: #c62828; stroke-width: 1.5; fill: none; }
</style>
</head>
<body>
<h1>faultline history: {{.Title}}</h1>
<p>Each phase's time after its anchor, run by run, oldest first: a dot per passing run, a red
cross per run that failed (at the top when it did not reach the phase), the band from P50 to
P95 of the passing runs, the regression gate's limit dashed.</p>
{{range .Trends}}<h2>{{.Scenario}}</h2>
<table><tr><th>phase</th><th>history</th></tr>
{{range phases .Phases}}<tr><td>{{.Phase}}</td><td>{{cell .}}</td></tr>
{{end}}</table>
{{end}}</body>
</html>
`))
