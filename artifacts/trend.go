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
func historyCell(s PhaseStats, took *float64, box trendBox) template.HTML {
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
	b.WriteString(string(drawTrend(s, took, box)))
	// Every part above is numbers and fixed words.
	return template.HTML(b.String())
}

// reportTrendBox is a trend's size in the report's phase table.
var reportTrendBox = trendBox{w: trendWidth, h: trendHeight}

// trendBox is a trend's size, and the margins of its axes (none: no
// axes).
type trendBox struct {
	w, h, left, bottom int
}

// The size of a phase's trend on the history page, with its axes: the
// seconds on the left, the first and last run's dates below.
var historyTrendBox = trendBox{w: 420, h: 96, left: 44, bottom: 16}

// drawTrend draws a phase's past runs left to right (a dot each passing
// run, a red cross each failed one, at its time or at the top when it did
// not reach the phase), the P50-P95 band, the gate's limit (dashed) and
// this run (a blue dot, last), in box, with its axes when box has
// margins.
func drawTrend(s PhaseStats, took *float64, box trendBox) template.HTML {
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
	n := len(s.Points)
	if took != nil || box.left == 0 {
		n++ // the report keeps the last place for this run
	}
	plotW, plotH := float64(box.w-box.left), float64(box.h-box.bottom)
	x := func(i int) float64 { return float64(box.left) + 4 + float64(i)*(plotW-8)/math.Max(1, float64(n-1)) }
	y := func(secs float64) float64 { return plotH - 2 - secs/top*(plotH-4) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="trend" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="trend">`, box.w, box.h)
	if box.left > 0 {
		// The axes: seconds at the top and at 0, the dates of the first
		// and the last run.
		fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="0" y2="%.1f"/><line class="axis" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, box.left, box.left, plotH, box.left, box.w, plotH, plotH)
		fmt.Fprintf(&b, `<text x="%d" y="10" text-anchor="end">%.0fs</text><text x="%d" y="%.1f" text-anchor="end">0s</text>`, box.left-4, top, box.left-4, plotH)
		if len(s.Points) > 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, box.left, box.h-3, s.Points[0].At.UTC().Format("2006-01-02"))
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, box.w, box.h-3, s.Points[len(s.Points)-1].At.UTC().Format("2006-01-02"))
		}
	}
	if s.Runs > 0 {
		fmt.Fprintf(&b, `<rect class="band" x="%d" y="%.1f" width="%.0f" height="%.1f"><title>P50 %.1fs to P95 %.1fs</title></rect>`, box.left, y(s.P95), plotW, math.Max(1, y(s.P50)-y(s.P95)), s.P50, s.P95)
		fmt.Fprintf(&b, `<line class="limit" x1="%d" x2="%d" y1="%.1f" y2="%.1f"><title>gate limit %.1fs</title></line>`, box.left, box.w, y(s.Limit()), y(s.Limit()), s.Limit())
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
