package artifacts

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
)

// failedRun is a run of power-off-worker whose health check never acted:
// one phase reached, one missed against its budget, an assertion that
// failed, and a fault undone.
func failedRun() *engine.Result {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { t := t0.Add(time.Duration(s * float64(time.Second))); return &t }
	dur := func(s float64) *scenario.Duration {
		d := scenario.D(time.Duration(s * float64(time.Second)))
		return &d
	}
	return &engine.Result{
		Scenario: "power-off-worker", Provider: "lab", Profile: "compressed", Verdict: engine.Fail,
		Reason:    "phase machine-unhealthy not reached within its budget 30s of inject",
		StartedAt: t0, FinishedAt: *at(45),
		Targets: []engine.TargetResult{{Name: "victim", Objects: []string{"Machine/lab-md-0-x"}}},
		Phases: []engine.PhaseResult{
			{Name: "node-not-ready", ObservedAt: at(7.2), SinceInject: dur(2.2), From: "inject", SinceAnchor: dur(2.2), AnchorAt: at(5), Budget: dur(60), OK: true},
			{Name: "machine-unhealthy", From: "inject", AnchorAt: at(5), Budget: dur(30), Message: "not reached within its budget 30s of inject (last seen: <b>Running</b>)"},
		},
		Assertions: []engine.AssertionResult{{Name: "api-stayed-available", OK: false, Message: "consistently api-available: stopped holding after 3s"}},
		Faults:     []engine.FaultResult{{ID: "power-off/lab-md-0-x", Kind: "vm.power-off", Target: "Machine/lab-md-0-x", InjectedAt: at(5), UndoneAt: at(44), Undo: "vm.power-on", Result: engine.ResultUndone}},
		Run: &engine.RunInfo{Host: "ci-runner-7", Faultline: "v0.1.0-abc", Where: "lab faultline-lab-1", Clusters: []string{"default/lab"},
			Replay: "faultline run scenario.yaml --seed 4"},
	}
}

// TestWriteReport: the chart has a bar per fault and phase, budget marks
// at the right place, the undo mark, and text is escaped.
func TestWriteReport(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReport(&b, failedRun(), []string{"dumps/machines.yaml"}, nil); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`<span class="verdict fail">fail</span>`,
		`<rect class="fault"`, `<rect class="reached"`, `<rect class="missed"`,
		`<line class="budget"`, `<line class="undo"`,
		`<a href="dumps/machines.yaml">`,
		"last seen: &lt;b&gt;Running&lt;/b&gt;",
		"Seconds from the first injection",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, want := range []string{"on ci-runner-7, faultline v0.1.0-abc; lab faultline-lab-1", "Cluster <code>default/lab</code>", "replay: <code>faultline run scenario.yaml --seed 4</code>"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Count(html, "<rect ") != 3 {
		t.Errorf("%d bars, want 3 (a fault and two phases)", strings.Count(html, "<rect "))
	}
	if strings.Contains(html, "http://") && !strings.Contains(html, `xmlns="http://www.w3.org/2000/svg"`) || strings.Contains(html, "https://") || strings.Contains(html, "<script") {
		t.Error("the report refers to something outside itself")
	}
	// The axis runs from the run's start (5 s before the injection) to
	// its end (40 s after it): 45 s over 660 px. The missed
	// machine-unhealthy's budget ends at 30 s: x = 230 + 35/45*660 =
	// 743.3; node-not-ready, reached, has its budget (60 s) beyond the
	// axis, and no mark.
	if !strings.Contains(html, `x1="743.33`) || strings.Count(html, `<line class="budget"`) != 1 {
		t.Errorf("want one budget mark, at x=743.3:\n%s", html[strings.Index(html, "<svg"):strings.Index(html, "</svg>")])
	}
}

// TestWriteReportScalesToTheRun: a 10 s run whose phases were reached
// within 2-minute budgets fills the chart; the budgets do not squeeze it
// into its first tenth.
func TestWriteReportScalesToTheRun(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	seen, budget, since := t0.Add(9*time.Second), scenario.D(2*time.Minute), scenario.D(9*time.Second)
	res := &engine.Result{Scenario: "quick", Provider: "lab", Verdict: engine.Pass, StartedAt: t0, FinishedAt: t0.Add(10 * time.Second),
		Phases: []engine.PhaseResult{{Name: "replacement-running", AnchorAt: &t0, ObservedAt: &seen, SinceAnchor: &since, Budget: &budget, From: "inject", OK: true}}}
	var b bytes.Buffer
	if err := WriteReport(&b, res, nil, nil); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<rect class="reached" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("no reached bar:\n%s", b.String())
	}
	if w, _ := strconv.ParseFloat(m[2], 64); w < chartPlot/2 {
		t.Errorf("the phase reached at 9 s of a 10 s run is %.0f px of %d", w, chartPlot)
	}
}

// TestResultsJUnit: a suite per run, a case per phase and assertion; the
// missed phase is a failure naming its budget, and only its own; each
// case has its own line and the suite every phase's time, with when and
// where it ran. A dry run is a skipped case, and an interruption an error
// whose message is one line.
func TestResultsJUnit(t *testing.T) {
	pass := failedRun()
	pass.Scenario, pass.Verdict, pass.Reason = "delete-cp-vm", engine.Pass, ""
	for i := range pass.Phases {
		pass.Phases[i].OK = true
	}
	for i := range pass.Assertions {
		pass.Assertions[i].OK = true
	}
	failed := failedRun()
	seed := int64(7)
	failed.Run = &engine.RunInfo{Host: "ci-runner-3", Faultline: "v0.2.0", Seed: &seed, Clusters: []string{"default/lab"}}
	dry := &engine.Result{Scenario: "dry", Provider: "lab", Verdict: engine.Pass, Reason: "dry run: nothing was injected", Run: &engine.RunInfo{DryRun: true}}
	cut := &engine.Result{Scenario: "cut", Provider: "lab", Verdict: engine.Interrupted, Reason: "interrupted: SIGINT\ncontext canceled"}
	var b bytes.Buffer
	if err := WriteJUnit(&b, ResultsJUnit([]*engine.Result{failed, pass, dry, cut})); err != nil {
		t.Fatal(err)
	}
	var doc JUnitSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 4 || doc.Suites[1].Failures != 0 || doc.Suites[1].Name != "delete-cp-vm" {
		t.Fatalf("suites %+v", doc.Suites)
	}
	s := doc.Suites[0]
	var names []string
	for _, c := range s.Cases {
		if c.Failure != nil {
			names = append(names, c.Name)
		}
	}
	if s.Tests != len(failed.Phases)+len(failed.Assertions) || s.Failures != len(names) || !slices.Contains(names, "phase machine-unhealthy") {
		t.Fatalf("suite %s: %d tests, %d failures (%v)", s.Name, s.Tests, s.Failures, names)
	}
	if s.Hostname != "ci-runner-3" || s.Timestamp != "2026-11-23T10:00:00" {
		t.Errorf("suite hostname %q, timestamp %q", s.Hostname, s.Timestamp)
	}
	props := map[string]string{}
	for _, p := range s.Properties {
		props[p.Name] = p.Value
	}
	if props["seed"] != "7" || props["faultline"] != "v0.2.0" || props["clusters"] != "default/lab" {
		t.Errorf("properties %v", props)
	}
	for _, c := range s.Cases {
		if c.Failure == nil {
			continue
		}
		// Its own failure, not every failure of the run.
		if !strings.HasPrefix(c.Failure.Message, c.Name+": ") || strings.Contains(c.Failure.Text, "\n") {
			t.Errorf("case %s: failure %+v", c.Name, c.Failure)
		}
		if c.Name == "phase machine-unhealthy" && !strings.Contains(c.Failure.Message, "not reached within its budget 30s") {
			t.Errorf("failure message %q lacks the budget", c.Failure.Message)
		}
	}
	if !strings.Contains(s.Output, "phase node-not-ready: 2.2s after inject (budget 1m0s)") || s.Cases[0].Output != "phase node-not-ready: 2.2s after inject (budget 1m0s)" {
		t.Errorf("suite output %q, first case's %q", s.Output, s.Cases[0].Output)
	}
	if d := doc.Suites[2]; d.Skipped != 1 || d.Cases[0].Skipped == nil || d.Cases[0].Skipped.Message != "dry run: nothing was injected" {
		t.Errorf("dry run suite %+v", d)
	}
	if c := doc.Suites[3]; c.Errors != 1 || c.Cases[0].Error == nil || c.Cases[0].Error.Message != "interrupted: SIGINT" {
		t.Errorf("interrupted suite %+v", c)
	}
}

// TestWriteReportWorkload: a run's workload shows in the report (a row
// per measure, a row per gap), as JUnit properties and in the summary.
func TestWriteReportWorkload(t *testing.T) {
	res := failedRun()
	t0 := res.StartedAt
	since := scenario.D(3 * time.Second)
	res.Workloads = []engine.WorkloadResult{{Name: "web", Target: "victim", Namespace: "faultline-workloads", Replicas: 2, Measures: []engine.MeasureResult{
		{Of: "requests", Samples: 160, Failed: 3, Total: scenario.D(750 * time.Millisecond), Longest: scenario.D(500 * time.Millisecond), Gaps: []engine.GapResult{
			{Start: t0.Add(8 * time.Second), SinceInject: &since, Duration: scenario.D(500 * time.Millisecond), Failed: 2, Reason: "via 172.18.0.5: timed out"},
			{Start: t0.Add(20 * time.Second), Duration: scenario.D(250 * time.Millisecond), Failed: 1, Reason: "connection refused"}}},
		{Of: "endpoints", Samples: 160, Total: scenario.D(0), Gaps: []engine.GapResult{}},
	}}}
	var b bytes.Buffer
	if err := WriteReport(&b, res, nil, nil); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"<h2>Workloads</h2>", "<td>web (2 replicas in faultline-workloads)</td><td>requests</td><td>160</td><td>3</td><td>2</td><td>750ms</td><td>500ms</td>",
		`<td>10:00:08.000</td><td>3s</td><td class="gap">500ms</td><td>2</td><td>via 172.18.0.5: timed out</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	props := map[string]string{}
	for _, p := range runProperties(res) {
		props[p.Name] = p.Value
	}
	if props["workload.web.requests.total"] != "750ms" || props["workload.web.requests.gaps"] != "2" || props["workload.web.endpoints.failed"] != "0 of 160" {
		t.Errorf("JUnit properties %v", props)
	}
	if s, err := MarkdownSummary([]*engine.Result{res}, nil); err != nil || !strings.Contains(s, "| | workload web, requests | 2 gap(s), 750ms down in all, longest 500ms (3 of 160 samples failed) |") {
		t.Errorf("summary lacks the workload's line:\n%s", s)
	}
}

// TestWriteReportBoundedTicks: a crafted result.json whose run spans the
// years 1 to 9999 draws at most about ten ticks, as any other (it drew one
// every 2 h: 424 MB of page in 37 s).
func TestWriteReportBoundedTicks(t *testing.T) {
	t.Parallel()
	res := failedRun()
	res.StartedAt = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	res.FinishedAt = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := WriteReport(&b, res, nil, nil); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 1<<20 {
		t.Errorf("the report is %d bytes, want the size of any other", b.Len())
	}
	for _, span := range []float64{45, 3e5, 3e11} {
		if n := span / tickStep(span); n > 10 {
			t.Errorf("span %gs: %g ticks, want at most 10", span, n)
		}
	}
}
