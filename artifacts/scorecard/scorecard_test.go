package scorecard

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
)

// result is a run of scenario with its phases reached after the given
// times (a negative one: missed), on stack.
func result(name, stack string, verdict engine.Verdict, phases map[string]time.Duration) *engine.Result {
	r := &engine.Result{Scenario: name, Verdict: verdict, Release: &engine.Release{Stack: stack, ClusterAPI: "v-" + stack, CAPV: "c-" + stack}}
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, p := range []string{"node-not-ready", "machine-unhealthy", "replacement-running"} {
		d, ok := phases[p]
		if !ok {
			continue
		}
		pr := engine.PhaseResult{Name: p}
		if d >= 0 {
			t := at.Add(d)
			pr.ObservedAt, pr.SinceAnchor, pr.OK = &t, &scenario.Duration{Duration: d}, true
		}
		r.Phases = append(r.Phases, pr)
	}
	return r
}

func runs(name, stack string, n int, verdict engine.Verdict, phases map[string]time.Duration) []*engine.Result {
	var out []*engine.Result
	for i := range n {
		p := map[string]time.Duration{}
		for k, d := range phases {
			if d >= 0 {
				d += time.Duration(i) * 100 * time.Millisecond // a spread
			}
			p[k] = d
		}
		out = append(out, result(name, stack, verdict, p))
	}
	return out
}

// TestCompareFlagsASlowerPhase: a phase whose median grew beyond 20 % and
// 5 s is a regression that names the phase in every form; one that moved
// within the tolerance is not flagged.
func TestCompareFlagsASlowerPhase(t *testing.T) {
	base := runs("power-off-worker", "v1.12", 4, engine.Pass, map[string]time.Duration{"node-not-ready": 2 * time.Second, "machine-unhealthy": 3 * time.Second, "replacement-running": 10 * time.Second})
	target := runs("power-off-worker", "v1.13", 4, engine.Pass, map[string]time.Duration{"node-not-ready": 2100 * time.Millisecond, "machine-unhealthy": 18 * time.Second, "replacement-running": 12 * time.Second})
	sc := Compare("v1.12", base, "v1.13", target, DefaultTolerance)
	if sc.Regressions != 1 {
		t.Fatalf("regressions %d, want 1: %+v", sc.Regressions, sc.Scenarios)
	}
	for _, p := range sc.Scenarios[0].Phases {
		switch {
		case p.Name == "machine-unhealthy" && (p.Flag == nil || !p.Flag.Regression || !strings.Contains(p.Flag.What, "3.15s -> 18.15s")):
			t.Errorf("machine-unhealthy: flag %+v, want a regression from 3.15s to 18.15s", p.Flag)
		case p.Name != "machine-unhealthy" && p.Flag != nil:
			t.Errorf("%s flagged within the tolerance (+2s on 10s is under 5s): %+v", p.Name, p.Flag)
		}
	}
	var text bytes.Buffer
	if err := sc.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "power-off-worker/machine-unhealthy: slower: median 3.15s -> 18.15s") {
		t.Errorf("text does not name the regression:\n%s", text.String())
	}
	var junit bytes.Buffer
	if err := artifacts.WriteJUnit(&junit, sc.JUnit()); err != nil {
		t.Fatal(err)
	}
	var doc artifacts.JUnitSuites
	if err := xml.Unmarshal(junit.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	failed := ""
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil {
			failed += c.Name + " "
		}
	}
	if doc.Suites[0].Failures != 1 || failed != "power-off-worker/machine-unhealthy " {
		t.Errorf("JUnit failures %d (%s), want the one slower phase", doc.Suites[0].Failures, failed)
	}
	var html bytes.Buffer
	if err := sc.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(html.String(), "<circle"); n != 24 {
		t.Errorf("HTML draws %d runs, want 3 phases x 2 sides x 4 runs", n)
	}
}

// TestCompareVerdicts: a worse verdict on the target side is a
// regression, a better one a difference, and a phase missed only on the
// target side a regression.
func TestCompareVerdicts(t *testing.T) {
	ok := map[string]time.Duration{"node-not-ready": 2 * time.Second, "machine-unhealthy": 3 * time.Second}
	missed := map[string]time.Duration{"node-not-ready": 2 * time.Second, "machine-unhealthy": -1}
	sc := Compare("a", append(runs("worse", "a", 2, engine.Pass, ok), runs("better", "a", 2, engine.Fail, missed)...),
		"b", append(runs("worse", "b", 2, engine.Fail, missed), runs("better", "b", 2, engine.Pass, ok)...), DefaultTolerance)
	got := map[string][]Flag{}
	for _, s := range sc.Scenarios {
		got[s.Name] = s.Flags
	}
	if w := got["worse"]; len(w) != 2 || !w[0].Regression || w[0].What != "verdict 2 pass -> 2 fail" || w[1].Phase != "machine-unhealthy" || !w[1].Regression {
		t.Errorf("worse: flags %+v, want the verdict and the missed phase as regressions", w)
	}
	if b := got["better"]; len(b) != 2 || b[0].Regression || b[1].Regression {
		t.Errorf("better: flags %+v, want two differences, no regression", b)
	}
	if sc.Regressions != 2 {
		t.Errorf("regressions %d, want 2", sc.Regressions)
	}
}

// TestCompareTellsNoiseFromChange: the same release against itself on a
// busy machine (medians 13.69 s and 23.88 s, +74 %, ranks interleaved)
// flags nothing; with 2 runs a side it says it cannot tell; every run of
// one side slower than every run of the other, 4 a side, is a regression
// (p = 1/70), 3 a side cannot be told (the smallest p is 1/20).
func TestCompareTellsNoiseFromChange(t *testing.T) {
	phase := func(stack string, secs ...float64) []*engine.Result {
		var out []*engine.Result
		for _, s := range secs {
			out = append(out, result("power-off-worker", stack, engine.Pass, map[string]time.Duration{"replacement-running": time.Duration(s * float64(time.Second))}))
		}
		return out
	}
	for _, c := range []struct {
		name         string
		base, target []float64
		regressions  int
		undecided    int
		wantP        float64
	}{
		{"noise", []float64{12.1, 13.69, 25.2, 13.5, 30.1}, []float64{23.88, 11.9, 26.0, 12.8, 24.0}, 0, 0, 0.655},
		{"two runs", []float64{13.69, 13.1}, []float64{23.88, 24.5}, 0, 1, 1.0 / 6},
		{"separated, 3 a side", []float64{10, 11, 12}, []float64{30, 31, 32}, 0, 1, 1.0 / 20},
		{"separated, 4 a side", []float64{10, 11, 12, 13}, []float64{30, 31, 32, 33}, 1, 0, 1.0 / 70},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := Compare("v1.13", phase("v1.13", c.base...), "v1.13", phase("v1.13", c.target...), DefaultTolerance)
			ph := sc.Scenarios[0].Phases[0]
			if sc.Regressions != c.regressions || sc.Undecided != c.undecided || ph.P == nil || *ph.P < c.wantP-0.001 || *ph.P > c.wantP+0.001 {
				p := -1.0
				if ph.P != nil {
					p = *ph.P
				}
				t.Errorf("regressions %d, undecided %d, p %.4f; want %d, %d, %.4f", sc.Regressions, sc.Undecided, p, c.regressions, c.undecided, c.wantP)
			}
			var text bytes.Buffer
			if err := sc.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if c.name == "two runs" && !strings.Contains(text.String(), "too few runs to tell from noise (2 and 2; the rank test needs 4 a side)") {
				t.Errorf("text does not say it cannot tell:\n%s", text.String())
			}
		})
	}
}
