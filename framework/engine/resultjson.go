package engine

import (
	"encoding/json"

	"github.com/faultline-dev/faultline/framework/scenario"
)

// ResultSchemaVersion is the version of result.json's form, written in
// every result: 2 added it, and beside each duration string ("1m30s") the
// same in seconds as a number (sinceInjectSeconds, budgetSeconds, ...,
// and the run's durationSeconds), which CI systems and jq can compare.
// Fields are only ever added; a reader of version 1 reads version 2.
const ResultSchemaVersion = 2

// MarshalJSON writes the result with its schema version and its duration
// in seconds.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		SchemaVersion int `json:"schemaVersion"`
		plain
		DurationSeconds float64 `json:"durationSeconds"`
	}{ResultSchemaVersion, plain(r), r.FinishedAt.Sub(r.StartedAt).Seconds()})
}

// MarshalJSON writes the phase with its durations in seconds too.
func (p PhaseResult) MarshalJSON() ([]byte, error) {
	type plain PhaseResult
	return json.Marshal(struct {
		plain
		SinceInjectSeconds *float64 `json:"sinceInjectSeconds,omitempty"`
		SinceAnchorSeconds *float64 `json:"sinceAnchorSeconds,omitempty"`
		BudgetSeconds      *float64 `json:"budgetSeconds,omitempty"`
	}{plain(p), seconds(p.SinceInject), seconds(p.SinceAnchor), seconds(p.Budget)})
}

func seconds(d *scenario.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
}
