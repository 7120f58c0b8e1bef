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
	base := runs("power-off-worker", "v1.12", 3, engine.Pass, map[string]time.Duration{"node-not-ready": 2 * time.Second, "machine-unhealthy": 3 * time.Second, "replacement-running": 10 * time.Second})
	target := runs("power-off-worker", "v1.13", 3, engine.Pass, map[string]time.Duration{"node-not-ready": 2100 * time.Millisecond, "machine-unhealthy": 18 * time.Second, "replacement-running": 12 * time.Second})
	sc := Compare("v1.12", base, "v1.13", target, DefaultTolerance)
	if sc.Regressions != 1 {
		t.Fatalf("regressions %d, want 1: %+v", sc.Regressions, sc.Scenarios)
	}
	for _, p := range sc.Scenarios[0].Phases {
		switch {
		case p.Name == "machine-unhealthy" && (p.Flag == nil || !p.Flag.Regression || !strings.Contains(p.Flag.What, "3.1s -> 18.1s")):
			t.Errorf("machine-unhealthy: flag %+v, want a regression from 3.1s to 18.1s", p.Flag)
		case p.Name != "machine-unhealthy" && p.Flag != nil:
			t.Errorf("%s flagged within the tolerance (+2s on 10s is under 5s): %+v", p.Name, p.Flag)
		}
	}
	var text bytes.Buffer
	if err := sc.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "power-off-worker/machine-unhealthy: slower: median 3.1s -> 18.1s") {
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
	if n := strings.Count(html.String(), "<circle"); n != 18 {
		t.Errorf("HTML draws %d runs, want 3 phases x 2 sides x 3 runs", n)
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
