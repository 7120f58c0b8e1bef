package scorecard

import (
	"html/template"
	"io"
	"math"
	"strconv"
)

// strip is one side of a phase drawn as dots on the phase's axis.
type strip struct {
	// Y is the strip's line; Y1 and Y2 the ends of its median's bar.
	Y, Y1, Y2 float64
	Class     string
	Dots      []float64
	Median    float64
	Has       bool
	Label     string
}

// phasePlot is one phase's two distributions on a shared axis.
type phasePlot struct {
	Phase  Phase
	Strips []strip
	Ticks  []tick
	Width  float64
}

type tick struct {
	X     float64
	Label string
}

// plotWidth is the drawing's width in pixels; plotLeft leaves room for
// the sides' names.
const plotWidth, plotLeft = 520.0, 70.0

// plot draws ph: both sides' samples as dots, each median a bar, on an
// axis from 0 to the longest sample.
func plot(ph Phase, base, target string) phasePlot {
	longest := math.Max(seconds(ph.Base.Max), seconds(ph.Target.Max))
	if longest <= 0 {
		longest = 1
	}
	step := niceStep(longest)
	span := math.Ceil(longest/step) * step
	x := func(s float64) float64 { return plotLeft + (plotWidth-plotLeft-10)*s/span }
	side := func(st Stats, y float64, class, label string) strip {
		s := strip{Y: y, Y1: y - 9, Y2: y + 9, Class: class, Label: label, Has: len(st.Samples) > 0, Median: x(seconds(st.Median))}
		for _, d := range st.Samples {
			s.Dots = append(s.Dots, x(seconds(d)))
		}
		return s
	}
	p := phasePlot{Phase: ph, Width: plotWidth,
		Strips: []strip{side(ph.Base, 18, "base", base), side(ph.Target, 42, "target", target)}}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	for i := 0; float64(i)*step <= span+step/2; i++ {
		t := float64(i) * step
		p.Ticks = append(p.Ticks, tick{X: x(t), Label: strconv.FormatFloat(t, 'f', decimals, 64) + "s"})
	}
	return p
}

// niceStep is a tick step of 1, 2 or 5 times a power of ten giving about
// five ticks over span seconds.
func niceStep(span float64) float64 {
	raw := span / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			return m * pow
		}
	}
	return 10 * pow
}

// WriteHTML writes the scorecard as one self-contained HTML page: per
// scenario its verdicts and, per phase, both sides' runs drawn on one
// axis with their medians, the flags beside them.
func (sc *Scorecard) WriteHTML(w io.Writer) error {
	type scenarioView struct {
		Scenario
		Plots []phasePlot
	}
	data := struct {
		*Scorecard
		BaseName, TargetName string
		Views                []scenarioView
		Alpha                float64
		MinRuns              int
	}{Scorecard: sc, BaseName: sc.Base.sideName(), TargetName: sc.Target.sideName(), Alpha: Alpha, MinRuns: MinRuns}
	for _, s := range sc.Scenarios {
		v := scenarioView{Scenario: s}
		for _, p := range s.Phases {
			v.Plots = append(v.Plots, plot(p, sc.Base.Label, sc.Target.Label))
		}
		data.Views = append(data.Views, v)
	}
	return page.Execute(w, data)
}

var page = template.Must(template.New("scorecard").Funcs(template.FuncMap{
	"verdicts": verdictsOf,
	"flag":     flagText,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>faultline scorecard: {{.Base.Label}} vs {{.Target.Label}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:60em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border-bottom:1px solid #ddd;padding:.2em .6em;text-align:left;vertical-align:middle}td:nth-child(2),td:nth-child(3){white-space:nowrap}
.regression{color:#b00020;font-weight:600}.changed{color:#8a5a00}
circle.base{fill:#1f77b4}circle.target{fill:#ff7f0e}line.base{stroke:#1f77b4}line.target{stroke:#ff7f0e}
svg text{font-size:11px;fill:#555}
</style></head><body>
<h1>Scorecard: {{.Base.Label}} vs {{.Target.Label}}</h1>
<p>Base <b>{{.BaseName}}</b>, {{.Base.Runs}} runs; target <b>{{.TargetName}}</b>, {{.Target.Runs}} runs.
A phase is flagged when its median moved beyond {{.Tolerance}} and a one-sided rank test (Mann-Whitney) gives p &lt; {{.Alpha}}, which takes {{.MinRuns}} runs a side at least, or when it was missed on one side only; a scenario when its verdicts changed.
Each dot is one run's time from the phase's anchor; the bar is the median.</p>
{{if .Regressions}}<p class="regression">{{.Regressions}} regression(s).</p>{{else}}<p>No regression.</p>{{end}}
{{with .Undecided}}<p class="changed">{{.}} phase(s) moved beyond the tolerance with too few runs to tell from noise.</p>{{end}}
{{range .Views}}<h2 id="{{.Name}}">{{.Name}}</h2>
<p>Base: {{verdicts .BaseVerdicts}}; target: {{verdicts .TargetVerdicts}}.
{{range .Flags}}{{if not .Phase}}<span class="{{if .Regression}}regression{{else}}changed{{end}}">{{flag .}}</span>{{end}}{{end}}</p>
<table><tr><th>phase</th><th>base median [min-max]</th><th>target median [min-max]</th><th>runs</th><th></th></tr>
{{range .Plots}}<tr><td>{{.Phase.Name}}</td><td>{{.Phase.Base}}</td><td>{{.Phase.Target}}</td>
<td><svg width="{{.Width}}" height="64" role="img" aria-label="{{.Phase.Name}}: base {{.Phase.Base}}, target {{.Phase.Target}}">
{{range .Strips}}<text x="2" y="{{.Y}}" dy="4">{{.Label}}</text>{{$s := .}}{{range .Dots}}<circle class="{{$s.Class}}" cx="{{.}}" cy="{{$s.Y}}" r="4" fill-opacity=".6"/>{{end}}{{if .Has}}<line class="{{.Class}}" x1="{{.Median}}" x2="{{.Median}}" y1="{{.Y1}}" y2="{{.Y2}}" stroke-width="2"/>{{end}}{{end}}
{{range .Ticks}}<text x="{{.X}}" y="62" text-anchor="middle">{{.Label}}</text>{{end}}
</svg></td>
<td>{{with .Phase.Flag}}<span class="{{if .Regression}}regression{{else}}changed{{end}}">{{flag .}}</span>{{end}}{{with .Phase.Undecided}}<span class="changed">undecided: {{.}}</span>{{end}}</td></tr>
{{end}}</table>
{{end}}</body></html>
`))
