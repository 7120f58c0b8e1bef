package artifacts

import (
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
)

// ReportFile is a run's HTML report.
const ReportFile = "report.html"

// Chart geometry, in pixels.
const (
	chartLabel = 230 // the label column
	chartPlot  = 660 // the time axis
	chartRow   = 26
	chartTop   = 30 // room for the axis labels
)

// chartBar is one row of the timeline chart: a fault from injection to
// undo, or a phase from its anchor to when it was reached (or, missed, to
// the end of its budget).
type chartBar struct {
	Label, Class, Title string
	Y, X, W             float64
	// Budget is the x of the budget's end; 0 when there is none.
	Budget float64
	// Mark is the x of a point event (an undo); 0 when there is none.
	Mark float64
}

type chartTick struct {
	X     float64
	Label string
}

type reportData struct {
	Res          *engine.Result
	Duration     string
	Bars         []chartBar
	Ticks        []chartTick
	Width        int
	Height       int
	AxisY        float64
	PlotLeft     int
	PlotRight    int
	Dumps        []string
	History      map[string]PhaseStats
	ZeroLabel    string
	VerdictClass string
	// Settings are the profile's settings, NAME=VALUE, sorted.
	Settings []string
	// Events are the clusters' Events of the run's window.
	Events []RunEvent
}

// phaseBar is phase p's bar on the chart, x placing a time on it: from
// its anchor to when it was reached (or its budget's end, or finished).
func phaseBar(p engine.PhaseResult, x func(time.Time) float64, finished time.Time) chartBar {
	if p.AnchorAt == nil {
		return chartBar{Label: p.Name, Class: "missed", X: chartLabel, Title: p.Name + ": " + p.Message}
	}
	b := chartBar{Label: p.Name, Class: "reached", X: x(*p.AnchorAt)}
	stop := finished
	if p.Budget != nil {
		b.Budget = x(p.AnchorAt.Add(p.Budget.Duration))
		stop = p.AnchorAt.Add(p.Budget.Duration)
	}
	if p.ObservedAt != nil {
		stop = *p.ObservedAt
		b.Title = fmt.Sprintf("%s: %s after %s", p.Name, p.ObservedAt.Sub(*p.AnchorAt).Round(time.Millisecond), p.From)
	}
	if !p.OK {
		b.Class = "missed"
		b.Title = p.Name + ": " + p.Message
	}
	if p.Budget != nil {
		b.Title += fmt.Sprintf(" (budget %s)", p.Budget)
	}
	if b.Budget > chartLabel+chartPlot {
		b.Budget = 0 // beyond the axis: the title says it
	}
	b.W = x(stop) - b.X
	return b
}

// WriteReport writes a self-contained HTML report of res: the verdict, a
// timeline chart (one bar per phase from its anchor, budget markers, the
// injected faults and their undos on the same axis, in seconds from the
// first injection), the phases, assertions and faults, and links to the
// dumps (paths relative to the report); with history, each phase's past
// P50 and P95 and the gate's limit. It loads nothing from anywhere.
func WriteReport(w io.Writer, res *engine.Result, dumps []string, history map[string]PhaseStats) error {
	return writeReport(w, res, dumps, history, nil)
}

// writeReport is WriteReport with the Events of the run's window.
func writeReport(w io.Writer, res *engine.Result, dumps []string, history map[string]PhaseStats, events []RunEvent) error {
	d := reportData{Res: res, Dumps: dumps, History: history, Events: events, Duration: res.FinishedAt.Sub(res.StartedAt).Round(time.Millisecond).String(),
		PlotLeft: chartLabel, PlotRight: chartLabel + chartPlot, Width: chartLabel + chartPlot + 20, VerdictClass: string(res.Verdict)}
	for _, k := range slices.Sorted(maps.Keys(res.ProfileSettings)) {
		d.Settings = append(d.Settings, k+"="+res.ProfileSettings[k])
	}
	zero := res.StartedAt
	d.ZeroLabel = "run start"
	for _, f := range res.Faults {
		if f.InjectedAt != nil && (d.ZeroLabel == "run start" || f.InjectedAt.Before(zero)) {
			zero, d.ZeroLabel = *f.InjectedAt, "first injection"
		}
	}
	end := res.FinishedAt
	later := func(t time.Time) {
		if t.After(end) {
			end = t
		}
	}
	// The axis ends with the run, or with the budget of a phase that was
	// never reached (its bar runs to it); a reached phase's budget far
	// beyond (2 min for a 10 s run) would squeeze the run into a corner.
	for _, p := range res.Phases {
		if p.AnchorAt != nil && p.Budget != nil && p.ObservedAt == nil {
			later(p.AnchorAt.Add(p.Budget.Duration))
		}
	}
	lo := math.Min(0, res.StartedAt.Sub(zero).Seconds())
	span := end.Sub(zero).Seconds() - lo
	if span <= 0 {
		span = 1
	}
	x := func(t time.Time) float64 { return chartLabel + (t.Sub(zero).Seconds()-lo)/span*chartPlot }
	row := 0
	add := func(b chartBar) {
		b.Y = float64(chartTop + row*chartRow)
		if b.W < 2 {
			b.W = 2 // an instant is still visible
		}
		d.Bars = append(d.Bars, b)
		row++
	}
	for _, f := range res.Faults {
		if f.InjectedAt == nil {
			continue
		}
		b := chartBar{Label: f.ID, Class: "fault", X: x(*f.InjectedAt)}
		stop := res.FinishedAt
		b.Title = fmt.Sprintf("%s on %s: injected %s", f.Kind, f.Target, f.InjectedAt.Sub(zero).Round(time.Millisecond))
		if f.UndoneAt != nil {
			stop = *f.UndoneAt
			b.Mark = x(stop)
			b.Title += fmt.Sprintf(", undone %s", stop.Sub(zero).Round(time.Millisecond))
		} else {
			b.Title += ", " + f.Undo + " " + f.Note
		}
		b.W = x(stop) - b.X
		add(b)
	}
	for _, p := range res.Phases {
		add(phaseBar(p, x, res.FinishedAt))
	}
	d.Height = chartTop + row*chartRow + 10
	d.AxisY = float64(chartTop - 8)
	step := tickStep(span)
	for s := math.Ceil(lo/step) * step; s <= lo+span+1e-9; s += step {
		d.Ticks = append(d.Ticks, chartTick{X: chartLabel + (s-lo)/span*chartPlot, Label: fmt.Sprintf("%gs", s+0)}) // s+0: no "-0s"
	}
	return reportTemplate.Execute(w, d)
}

// tickStep is a round step giving at most about ten ticks over span
// seconds, whatever the span: a crafted result.json spanning years 1 to
// 9999 drew a tick every 2 h, 424 MB of page.
func tickStep(span float64) float64 {
	for _, s := range []float64{0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600} {
		if span/s <= 10 {
			return s
		}
	}
	s := 7200.0
	for span/s > 10 {
		s *= 2
	}
	return s
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ts": func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format("15:04:05.000")
	},
	"dur": func(d *scenario.Duration) string {
		if d == nil {
			return "-"
		}
		return d.Round(time.Millisecond).String()
	},
	"ts0":  func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"plus": func(a, b float64) float64 { return a + b },
	"hist": func(h map[string]PhaseStats, p engine.PhaseResult) template.HTML {
		s, ok := h[p.Name]
		if !ok {
			return "-"
		}
		var took *float64
		if p.SinceAnchor != nil && p.OK {
			secs := p.SinceAnchor.Seconds()
			took = &secs
		}
		return historyCell(s, took, reportTrendBox)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>faultline: {{.Res.Scenario}} {{.Res.Verdict}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; color: #fff; font-weight: bold; }
.verdict.pass { background: #2e7d32; } .verdict.fail { background: #c62828; }
.verdict.error { background: #6a1b9a; } .verdict.skipped { background: #757575; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.ok { color: #2e7d32; font-weight: bold; } td.bad { color: #c62828; font-weight: bold; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
rect.fault { fill: #5c6bc0; } rect.reached { fill: #43a047; } rect.missed { fill: #e53935; }
line.budget { stroke: #222; stroke-width: 2; } line.undo { stroke: #1a237e; stroke-width: 3; }
line.tick { stroke: #ccc; } line.zero { stroke: #888; stroke-dasharray: 4 3; }
svg.trend rect.band { fill: #c8e6c9; } svg.trend line.limit { stroke: #c62828; stroke-dasharray: 3 2; }
svg.trend circle.past { fill: #555; } svg.trend circle.pastrun { fill: none; stroke: #555; stroke-width: 1; } svg.trend circle.now { fill: #1565c0; } svg.trend path.failed { stroke: #c62828; stroke-width: 1.5; fill: none; }
</style>
</head>
<body>
<h1>{{.Res.Scenario}} <span class="verdict {{.VerdictClass}}">{{.Res.Verdict}}</span></h1>
<p>provider {{.Res.Provider}}{{with .Res.Profile}} ({{.}} time profile){{end}}{{with .Res.Release}}, release {{.Stack}} (Cluster API {{.ClusterAPI}}, CAPV {{.CAPV}}{{with .Untested}}, {{.}}{{end}}{{if .InProcess}}, in faultline's process{{else}}, managers {{range $m, $v := .Managers}}<code>{{$m}} {{$v}}</code> {{end}}{{end}}){{with .UpgradedTo}}, upgraded to {{.Stack}} (Cluster API {{.ClusterAPI}}, CAPV {{.CAPV}}){{end}}{{range $i, $v := .Via}}{{if eq $i 0}} via {{else}}, {{end}}{{$v.Stack}} (Cluster API {{$v.ClusterAPI}}, CAPV {{$v.CAPV}}){{end}}{{end}};
started {{.Res.StartedAt.UTC.Format "2006-01-02 15:04:05.000 MST"}}, took {{.Duration}}.{{with .Res.Reason}}<br><b>{{.}}</b>{{end}}</p>
{{with .Res.Run}}<p class="run">{{with .Host}}on {{.}}{{end}}{{with .Faultline}}, faultline {{.}}{{end}}{{with .Where}}; {{.}}{{end}}{{with .Clusters}}; Cluster{{if gt (len .) 1}}s{{end}} {{range $i, $c := .}}{{if $i}}, {{end}}<code>{{$c}}</code>{{end}}{{end}}{{with .Replay}}<br>replay: <code>{{.}}</code>{{end}}</p>{{end}}
{{with .Settings}}<p class="settings">profile settings: {{range $i, $s := .}}{{if $i}}, {{end}}<code>{{$s}}</code>{{end}}</p>{{end}}

<h2>Timeline</h2>
<p>Seconds from the {{.ZeroLabel}}. Faults (blue) run from injection to undo (dark mark);
phases run from their anchor to when they were reached (green) or, missed, to the end of
their budget (red); a black mark is a budget's end.</p>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="timeline">
{{range .Ticks}}<line class="tick" x1="{{.X}}" x2="{{.X}}" y1="{{$.AxisY}}" y2="{{$.Height}}"/><text x="{{.X}}" y="{{$.AxisY}}" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Bars}}<g><title>{{.Title}}</title><text x="4" y="{{plus .Y 15}}">{{.Label}}</text><rect class="{{.Class}}" x="{{.X}}" y="{{plus .Y 4}}" width="{{.W}}" height="16"/>{{if .Budget}}<line class="budget" x1="{{.Budget}}" x2="{{.Budget}}" y1="{{.Y}}" y2="{{plus .Y 24}}"/>{{end}}{{if .Mark}}<line class="undo" x1="{{.Mark}}" x2="{{.Mark}}" y1="{{.Y}}" y2="{{plus .Y 24}}"/>{{end}}</g>
{{end}}</svg>

<h2>Phases</h2>
<table><tr><th>phase</th><th>reached</th><th>after its anchor</th><th>since injection</th><th>budget</th>{{if .History}}<th>history</th>{{end}}<th></th><th>what was seen</th></tr>
{{range .Res.Phases}}<tr><td>{{.Name}}</td><td>{{ts .ObservedAt}}</td><td>{{if .SinceAnchor}}{{dur .SinceAnchor}} after {{.From}}{{else}}-{{end}}</td><td>{{dur .SinceInject}}</td><td>{{dur .Budget}}</td>{{if $.History}}<td>{{hist $.History .}}</td>{{end}}{{if .OK}}<td class="ok">ok</td>{{else if .Cut}}<td>not reached ({{.Cut}})</td>{{else}}<td class="bad">missed</td>{{end}}<td>{{with .Message}}{{.}}{{else}}{{.Seen}}{{end}}</td></tr>
{{end}}</table>

<h2>Assertions</h2>
<table><tr><th>assertion</th><th></th><th>message</th></tr>
{{range .Res.Assertions}}<tr><td>{{.Name}}</td>{{if .OK}}<td class="ok">ok</td>{{else}}<td class="bad">failed</td>{{end}}<td>{{.Message}}</td></tr>
{{end}}</table>

{{with .Res.Workloads}}<h2>Workloads</h2>
<table><tr><th>workload</th><th>measure</th><th>samples</th><th>failed</th><th>gaps</th><th>down in all</th><th>longest</th></tr>
{{range $w := .}}{{range .Measures}}<tr><td>{{$w.Name}} ({{$w.Replicas}} replicas in {{$w.Namespace}})</td><td>{{.Of}}</td><td>{{.Samples}}</td><td>{{.Failed}}</td><td>{{len .Gaps}}</td><td>{{.Total.Round 1000000}}</td><td>{{.Longest.Round 1000000}}</td></tr>
{{end}}{{end}}</table>
<table><tr><th>workload</th><th>measure</th><th>gap from</th><th>after the fault</th><th>lasted</th><th>failed samples</th><th>first reason</th></tr>
{{range $w := .}}{{range $m := .Measures}}{{range .Gaps}}<tr><td>{{$w.Name}}</td><td>{{$m.Of}}</td><td>{{ts0 .Start}}</td><td>{{dur .SinceInject}}</td><td class="gap">{{.Duration.Round 1000000}}{{if .Open}} (still down){{end}}</td><td>{{.Failed}}</td><td>{{.Reason}}</td></tr>
{{end}}{{end}}{{end}}</table>{{end}}

{{with .Events}}<h2>Events during the run</h2>
<table><tr><th>time</th><th>cluster</th><th>object</th><th>reason</th><th>message</th></tr>
{{range .}}<tr><td>{{.Time}}</td><td>{{.Cluster}}</td><td>{{.Object}}</td><td>{{if eq .Type "Warning"}}<b>{{.Reason}}</b>{{else}}{{.Reason}}{{end}}{{if gt .Count 1}} (x{{.Count}}){{end}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{end}}

<h2>Faults</h2>
<table><tr><th>fault</th><th>kind</th><th>target</th><th>injected</th><th>undone</th><th>undo</th><th>result</th></tr>
{{range .Res.Faults}}<tr><td>{{.ID}}</td><td>{{.Kind}}</td><td>{{.Target}}</td><td>{{ts .InjectedAt}}</td><td>{{ts .UndoneAt}}</td><td>{{.Undo}}{{with .Note}}: {{.}}{{end}}</td><td>{{.Result}}</td></tr>
{{end}}</table>

<h2>Targets</h2>
<table><tr><th>target</th><th>objects</th><th>random seed</th></tr>
{{range .Res.Targets}}<tr><td>{{.Name}}</td><td>{{range $i, $o := .Objects}}{{if $i}}, {{end}}{{$o}}{{end}}</td><td>{{with .Seed}}{{.}}{{end}}</td></tr>
{{end}}</table>
{{if .Dumps}}
<h2>Dumps</h2>
<ul>{{range .Dumps}}<li><a href="{{.}}">{{.}}</a></li>{{end}}</ul>
{{end}}
</body>
</html>
`))
