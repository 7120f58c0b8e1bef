package engine

import (
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
)

// Verdict is how a run ended.
type Verdict string

// The verdicts.
const (
	// Pass: every phase was reached within budget and every assertion held.
	Pass Verdict = "pass"
	// Fail: the run completed and an expectation was not met.
	Fail Verdict = "fail"
	// Error: the run could not be carried out (infrastructure unreachable,
	// a fault could not be applied or undone, baseline not healthy).
	Error Verdict = "error"
	// Interrupted: a signal (Ctrl-C, SIGTERM, SIGHUP) or the caller's
	// context ended the run; what it had not reached yet was not missed.
	Interrupted Verdict = "interrupted"
	// TimedOut: the scenario's timeout passed before its steps ended.
	TimedOut Verdict = "timed-out"
	// Skipped: the provider lacks a capability the scenario requires.
	Skipped Verdict = "skipped"
)

// Release is the Cluster API and CAPV stack a lab ran.
type Release struct {
	Stack      string `json:"stack"`
	ClusterAPI string `json:"clusterAPI"`
	CAPV       string `json:"capv"`
	// InProcess says the controllers ran in faultline's own process (the
	// release it links); otherwise each manager ran as a process of its
	// own.
	InProcess bool `json:"inProcess,omitempty"`
	// Untested, when set, says why the pair is one CAPV does not test.
	Untested string `json:"untested,omitempty"`
	// Managers are the versions the managers reported, by binary.
	Managers map[string]string `json:"managers,omitempty"`
	// UpgradedTo is the release running when the run ended, when an
	// upgrade.management step replaced this one.
	UpgradedTo *Release `json:"upgradedTo,omitempty"`
	// Via are the releases upgraded through between this one and
	// UpgradedTo, in order (v1.12 on the way from v1.11 to v1.13).
	Via []Release `json:"via,omitempty"`
}

// Path names the releases a run went through: "v1.11", or "v1.11
// upgraded to v1.13 via v1.12".
func (r *Release) Path() string {
	s := r.Stack
	if r.UpgradedTo == nil {
		return s
	}
	s += " upgraded to " + r.UpgradedTo.Stack
	for i, v := range r.Via {
		if i == 0 {
			s += " via "
		} else {
			s += ", "
		}
		s += v.Stack
	}
	return s
}

// Result is the outcome of one run. Its JSON form is faultline's stable
// output (--output json, result.json); fields are only ever added.
type Result struct {
	Scenario string `json:"scenario"`
	Provider string `json:"provider"`
	// Profile names the lab's time profile (compressed or real); empty on
	// real infrastructure.
	Profile string `json:"profile,omitempty"`
	// ProfileSettings are the profile's timings and the feature gates it
	// sets (gate.NAME), as the lab ran with them.
	ProfileSettings map[string]string `json:"profileSettings,omitempty"`
	// Release is the Cluster API and CAPV release the lab's management
	// plane ran; empty on real infrastructure.
	Release    *Release          `json:"release,omitempty"`
	Verdict    Verdict           `json:"verdict"`
	Reason     string            `json:"reason,omitempty"`
	StartedAt  time.Time         `json:"startedAt"`
	FinishedAt time.Time         `json:"finishedAt"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Targets    []TargetResult    `json:"targets"`
	Phases     []PhaseResult     `json:"phases"`
	Assertions []AssertionResult `json:"assertions"`
	Faults     []FaultResult     `json:"faults"`
	// Planned is what a dry run would inject, step by step.
	Planned []PlannedFault `json:"planned,omitempty"`
	// Workloads are what the scenario's workloads felt.
	Workloads []WorkloadResult `json:"workloads,omitempty"`
	// Run says what ran where, and how to run it again.
	Run *RunInfo `json:"run,omitempty"`
}

// PlannedFault is an inject step of a dry run: its fault and the objects
// it would act on.
type PlannedFault struct {
	Step    string   `json:"step"`
	Fault   string   `json:"fault"`
	Target  string   `json:"target"`
	Objects []string `json:"objects"`
}

// TargetResult records what a target resolved to, and the seed of a random
// pick so the run can be replayed.
type TargetResult struct {
	Name    string   `json:"name"`
	Objects []string `json:"objects"`
	Seed    *int64   `json:"seed,omitempty"`
	// After is the step once which the target was resolved, if not
	// before the first step.
	After string `json:"after,omitempty"`
}

// PhaseResult is when a phase was reached, against its budget.
type PhaseResult struct {
	Name string `json:"name"`
	// ObservedAt is when faultline saw the condition hold; nil if never.
	ObservedAt *time.Time `json:"observedAt"`
	// SinceInject is ObservedAt minus the first injection.
	SinceInject *scenario.Duration `json:"sinceInject"`
	// From and SinceAnchor give the offset from the phase's own anchor;
	// AnchorAt is when the anchor was reached (its budget counts from
	// there), nil if never.
	From        scenario.Anchor    `json:"from"`
	SinceAnchor *scenario.Duration `json:"sinceAnchor,omitempty"`
	AnchorAt    *time.Time         `json:"anchorAt,omitempty"`
	// Budget is the phase's within; nil when it has none.
	Budget  *scenario.Duration `json:"budget"`
	OK      bool               `json:"ok"`
	Message string             `json:"message,omitempty"`
	// Seen is what faultline saw when the phase was reached (the
	// replacement Machine's name, a Node's condition).
	Seen string `json:"seen,omitempty"`
	// Cut is why the wait ended before the phase's own window did
	// (Interrupted or TimedOut): not reached, but not missed either.
	Cut Verdict `json:"cut,omitempty"`
}

// AssertionResult is the outcome of one assert step.
type AssertionResult struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	// Took is how long the check ran: its window, or a moment for a
	// check of what was already recorded.
	Took *scenario.Duration `json:"took,omitempty"`
}

// FaultResult is one fault applied to one object.
type FaultResult struct {
	ID         string     `json:"id"`
	Kind       string     `json:"kind"`
	Target     string     `json:"target"`
	InjectedAt *time.Time `json:"injectedAt"`
	UndoneAt   *time.Time `json:"undoneAt"`
	// Undo is the undo action, or "none" with Note saying why.
	Undo   string `json:"undo"`
	Note   string `json:"note,omitempty"`
	Result string `json:"result,omitempty"`
	// Workload names the workload this is the deployment of: not a fault
	// of the scenario, undone at the end like one.
	Workload string `json:"workload,omitempty"`
}
