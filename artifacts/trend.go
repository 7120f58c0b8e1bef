package artifacts

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/faultline-dev/faultline/framework/engine"
)

// The size of a phase's trend in the report's phase table.
const (
	trendWidth  = 180
	trendHeight = 40
)

// historyCell is a phase's history in the report: P50, P95, the gate's
// limit, the change against the last passing run, how many runs count and
// how many failed ones were left out, then the trend.
func historyCell(s PhaseStats, took *float64) template.HTML {
	var b strings.Builder
	if s.Runs > 0 {
		fmt.Fprintf(&b, "P50 %.1fs, P95 %.1fs, limit %.1fs", s.P50, s.P95, s.Limit())
		if took != nil {
			fmt.Fprintf(&b, "; %+.1fs on the last", *took-s.Last)
		}
		fmt.Fprintf(&b, " (%d passing runs", s.Runs)
	} else {
		b.WriteString("(no passing run")
	}
	if s.Failed > 0 {
		fmt.Fprintf(&b, ", %d failed left out", s.Failed)
	}
	b.WriteString(")<br>")
	b.WriteString(string(trendSVG(s, took)))
	// Every part above is numbers and fixed words.
	return template.HTML(b.String())
}

// trendSVG draws a phase's past runs left to right (a dot each passing
// run, a red cross each failed one, at its time or at the top when it did
// not reach the phase), the P50-P95 band, the gate's limit (dashed) and
// this run (a blue dot, last).
func trendSVG(s PhaseStats, took *float64) template.HTML {
	top := s.Limit()
	for _, p := range s.Points {
		top = math.Max(top, p.Seconds)
	}
	if took != nil {
		top = math.Max(top, *took)
	}
	if top <= 0 {
		top = 1
	}
	top *= 1.1
	n := len(s.Points) + 1
	x := func(i int) float64 { return 4 + float64(i)*float64(trendWidth-8)/math.Max(1, float64(n-1)) }
	y := func(secs float64) float64 { return float64(trendHeight-2) - secs/top*float64(trendHeight-4) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="trend" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="trend">`, trendWidth, trendHeight)
	if s.Runs > 0 {
		fmt.Fprintf(&b, `<rect class="band" x="0" y="%.1f" width="%d" height="%.1f"><title>P50 %.1fs to P95 %.1fs</title></rect>`, y(s.P95), trendWidth, math.Max(1, y(s.P50)-y(s.P95)), s.P50, s.P95)
		fmt.Fprintf(&b, `<line class="limit" x1="0" x2="%d" y1="%.1f" y2="%.1f"><title>gate limit %.1fs</title></line>`, trendWidth, y(s.Limit()), y(s.Limit()), s.Limit())
	}
	for i, p := range s.Points {
		when := p.At.UTC().Format("2006-01-02 15:04")
		switch {
		case p.Verdict == engine.Pass && p.Reached:
			fmt.Fprintf(&b, `<circle class="past" cx="%.1f" cy="%.1f" r="2.5"><title>%s: %.1fs</title></circle>`, x(i), y(p.Seconds), when, p.Seconds)
		case p.Reached:
			// The phase passed in a run that failed elsewhere: a hollow
			// point, not a cross, which is for the phase that failed.
			fmt.Fprintf(&b, `<circle class="pastrun" cx="%.1f" cy="%.1f" r="2.5"><title>%s: %.1fs (the run: %s)</title></circle>`, x(i), y(p.Seconds), when, p.Seconds, p.Verdict)
		default:
			fmt.Fprintf(&b, `<path class="failed" d="M%.1f %.1fl5 5m0 -5l-5 5"><title>%s: not reached (%s)</title></path>`, x(i)-2.5, y(top/1.1)-2.5, when, p.Verdict)
		}
	}
	if took != nil {
		fmt.Fprintf(&b, `<circle class="now" cx="%.1f" cy="%.1f" r="3.5"><title>this run: %.1fs</title></circle>`, x(n-1), y(*took), *took)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
