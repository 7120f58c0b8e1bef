package engine_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
)

// result.json carries its schema version and every duration in seconds
// as a number beside its string, and still reads back into a Result.
func TestResultJSON(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	d := scenario.D(2500 * time.Millisecond)
	budget := scenario.D(time.Minute)
	res := engine.Result{Scenario: "s", Verdict: engine.Pass, StartedAt: start, FinishedAt: start.Add(90 * time.Second),
		Phases: []engine.PhaseResult{{Name: "p", SinceInject: &d, SinceAnchor: &d, Budget: &budget, OK: true}}}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion   int     `json:"schemaVersion"`
		DurationSeconds float64 `json:"durationSeconds"`
		Phases          []struct {
			SinceInject        string  `json:"sinceInject"`
			SinceInjectSeconds float64 `json:"sinceInjectSeconds"`
			BudgetSeconds      float64 `json:"budgetSeconds"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != engine.ResultSchemaVersion || doc.DurationSeconds != 90 || doc.Phases[0].SinceInject != "2.5s" || doc.Phases[0].SinceInjectSeconds != 2.5 || doc.Phases[0].BudgetSeconds != 60 {
		t.Errorf("result.json: %s", b)
	}
	var back engine.Result
	if err := json.Unmarshal(b, &back); err != nil || back.Phases[0].SinceInject.Duration != d.Duration || back.Scenario != "s" {
		t.Errorf("read back: %+v, %v", back, err)
	}
}

func TestReleasePath(t *testing.T) {
	t.Parallel()
	v := func(s string) *engine.Release { return &engine.Release{Stack: s} }
	for _, tc := range []struct {
		r    *engine.Release
		want string
	}{
		{v("v1.13"), "v1.13"},
		{&engine.Release{Stack: "v1.12", UpgradedTo: v("v1.13")}, "v1.12 upgraded to v1.13"},
		{&engine.Release{Stack: "v1.11", UpgradedTo: v("v1.13"), Via: []engine.Release{*v("v1.12")}}, "v1.11 upgraded to v1.13 via v1.12"},
		{&engine.Release{Stack: "v1.11", UpgradedTo: v("v1.14"), Via: []engine.Release{*v("v1.12"), *v("v1.13")}}, "v1.11 upgraded to v1.14 via v1.12, v1.13"},
	} {
		if got := tc.r.Path(); got != tc.want {
			t.Errorf("Path() = %q, want %q", got, tc.want)
		}
	}
}
