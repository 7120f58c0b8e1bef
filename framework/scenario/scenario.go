package scenario

import (
	"time"

	"github.com/faultline-dev/faultline/providers"
)

// What a scenario gets when it sets no timeout or poll interval, the
// shortest poll interval it may set, and the longest duration it may
// write anywhere (a budget, a window, a timeout): the real profile's
// seeds recover in minutes, and a nightly run must end.
const (
	DefaultTimeout      = 30 * time.Minute
	DefaultPollInterval = 2 * time.Second
	MinPollInterval     = 50 * time.Millisecond
	MaxDuration         = 24 * time.Hour
)

// APIVersion and Kind identify a scenario file.
const (
	APIVersion = "faultline.dev/v1alpha1"
	Kind       = "Scenario"
)

// Scenario is one disaster scenario: what to break, what to watch, and what
// must (or must not) happen, and when. The YAML form maps field for field onto
// these types.
type Scenario struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   Metadata `yaml:"metadata"`
	Spec       Spec     `yaml:"spec"`

	// Source names the file the scenario was read from, for messages;
	// Text is the file as it was read (before --set values).
	Source string `yaml:"-"`
	Text   []byte `yaml:"-"`
	// positions maps a field path (spec.steps[2].inject.fault) to where it
	// stands in Source, so validation errors can point at the line.
	positions map[string]Pos
}

// Metadata describes a scenario for people and for selection by label.
type Metadata struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Labels      map[string]string `yaml:"labels"`
	References  []Reference       `yaml:"references"`
}

// LabelOwnCluster ("true") on a scenario asks for a lab of its own, never
// a warm one another scenario ran on before: its fault takes the whole
// workload API down, and in a nightly run Cluster API missed a worker
// deleted right after such an outage on the same cluster (the Machine's
// Node condition stayed True for 2 minutes).
const LabelOwnCluster = "own-cluster"

// OwnCluster tells whether the scenario asks for a lab of its own
// (LabelOwnCluster).
func (s *Scenario) OwnCluster() bool { return s.Metadata.Labels[LabelOwnCluster] == "true" }

// Reference ties a scenario to the incident or seed it reproduces.
type Reference struct {
	// Kind is one of seed, incident, url.
	Kind string `yaml:"kind"`
	ID   string `yaml:"id"`
}

// Spec is what a scenario does.
type Spec struct {
	// Requires lists the provider capabilities the scenario needs. A provider
	// that lacks one makes the run end as skipped, with the reason.
	Requires []providers.Capability `yaml:"requires"`
	// Parameters are named defaults referenced as ${name} anywhere in the
	// file and overridden with --set name=value.
	Parameters map[string]string `yaml:"parameters"`
	// Timeout bounds the whole run; DefaultTimeout when unset.
	Timeout Duration `yaml:"timeout"`
	// PollInterval is how often conditions are re-read when no watch
	// notification arrives; DefaultPollInterval when unset.
	PollInterval Duration `yaml:"pollInterval"`
	Targets      []Target `yaml:"targets"`
	Steps        []Step   `yaml:"steps"`
	// Lab is the cluster the embedded lab starts for this scenario when
	// no provider is named. Without it the lab is vCenter only.
	Lab *LabSpec `yaml:"lab"`
	// Safety loosens the runner's blast-radius limits; each loosening is
	// a statement that the scenario means to do it.
	Safety Safety `yaml:"safety"`
	// Workloads are applications deployed before the first step and
	// watched throughout: what a fault does to them is measured (see
	// Workload).
	Workloads []Workload `yaml:"workloads"`
}

// Safety holds what a scenario declares it accepts.
type Safety struct {
	// AcceptQuorumLoss lets the scenario take more than (n-1)/2 of a
	// control plane's n etcd members at once. Without it the runner
	// refuses before injecting anything.
	AcceptQuorumLoss bool `yaml:"acceptQuorumLoss"`
}

// Target names a set of objects a fault or a condition applies to.
type Target struct {
	Name   string             `yaml:"name"`
	Select providers.Selector `yaml:"select"`
	// Count picks this many of the matching objects; Percent picks a share
	// (rounded up). With neither, every match is the target.
	Count   int `yaml:"count"`
	Percent int `yaml:"percent"`
	// Random picks at random instead of the first matches in name order.
	Random *Random `yaml:"random"`
	// Exclude names earlier targets whose objects this one never picks
	// ("a second control plane, not the first victim").
	Exclude []string `yaml:"exclude"`
	// After names a step: the target is resolved once that step has
	// ended, for what the step made (the Machines a scale-up or a
	// remediation created), and only conditions of later steps read it.
	// A fault never acts on it: what faults act on is resolved, leased
	// and checked against the blast radius before the first step.
	After string `yaml:"after"`
}

// Random makes a pick replayable: the seed used is recorded in the result.
type Random struct {
	// Seed fixes the pick; when nil, a seed is drawn and recorded.
	Seed *int64 `yaml:"seed"`
}

// Step is one ordered step. Exactly one of the kinds is set.
type Step struct {
	Name string `yaml:"name"`
	// Timeout bounds the step; it never outlives the scenario's deadline.
	Timeout  Duration  `yaml:"timeout"`
	Setup    *Baseline `yaml:"setup"`
	Inject   *Inject   `yaml:"inject"`
	Observe  *Observe  `yaml:"observe"`
	Assert   *Assert   `yaml:"assert"`
	Undo     *UndoStep `yaml:"undo"`
	Teardown *Baseline `yaml:"teardown"`
}

// StepKind names the kind of step that is set.
func (s Step) StepKind() string {
	switch {
	case s.Setup != nil:
		return "setup"
	case s.Inject != nil:
		return "inject"
	case s.Observe != nil:
		return "observe"
	case s.Assert != nil:
		return "assert"
	case s.Undo != nil:
		return "undo"
	case s.Teardown != nil:
		return "teardown"
	}
	return ""
}

// Baseline is a set of conditions that must hold before faults (setup) or
// after every undo (teardown). Setup failing ends the run as error, not
// fail: the cluster was not healthy to begin with.
type Baseline struct {
	Require []Condition `yaml:"require"`
}

// Inject applies a fault to a target. The step name is the fault's id.
type Inject struct {
	Fault  string            `yaml:"fault"`
	Target string            `yaml:"target"`
	Params map[string]string `yaml:"params"`
}

// Observe waits for named phases. Phases are watched together; the step ends
// when every phase is reached or its deadline passes.
type Observe struct {
	Phases []Phase `yaml:"phases"`
	// While lists conditions that must hold at every reading for as long
	// as the step watches its phases ("the API server stayed available
	// throughout the remediation"). Each is recorded as an assertion.
	While []Guard `yaml:"while"`
}

// Guard is a named condition an observe step checks while it waits.
type Guard struct {
	Name      string    `yaml:"name"`
	Condition Condition `yaml:"condition"`
}

// Phase is a named moment: the first time its condition holds.
type Phase struct {
	Name string    `yaml:"name"`
	When Condition `yaml:"when"`
	// Within is the budget from From; the phase fails if reached later, and
	// the wait ends when the budget is spent.
	Within Duration `yaml:"within"`
	// From is the anchor of Within; see Anchor.
	From Anchor `yaml:"from"`
}

// Assert is one assertion. Exactly one kind is set.
type Assert struct {
	// Within: a phase was reached within a budget of an anchor.
	Within *WithinAssertion `yaml:"within"`
	// Never: a condition does not hold at any time in a window.
	Never *WindowAssertion `yaml:"never"`
	// Consistently: a condition holds at every observation in a window.
	Consistently *WindowAssertion `yaml:"consistently"`
	// Count: how many times a condition becomes true in a window.
	Count *CountAssertion `yaml:"count"`
	// Disruption: a workload's disruption over the run stayed within
	// bounds.
	Disruption *DisruptionAssertion `yaml:"disruption"`
}

// WithinAssertion checks a recorded phase time against a budget.
type WithinAssertion struct {
	Phase  string   `yaml:"phase"`
	Budget Duration `yaml:"budget"`
	From   Anchor   `yaml:"from"`
}

// WindowAssertion watches a condition for a window that starts when the step
// starts.
type WindowAssertion struct {
	Condition Condition `yaml:"condition"`
	For       Duration  `yaml:"for"`
}

// CountAssertion counts occurrences of a condition in a window: each time,
// after the first reading, an object starts satisfying it (a VM powered on
// again, a new replacement Machine that appears).
type CountAssertion struct {
	Condition Condition `yaml:"condition"`
	For       Duration  `yaml:"for"`
	AtLeast   *int      `yaml:"atLeast"`
	AtMost    *int      `yaml:"atMost"`
}

// UndoStep undoes one injected fault (by its inject step's name) or all
// pending faults.
type UndoStep struct {
	Fault string `yaml:"fault"`
	All   bool   `yaml:"all"`
}

// Condition is something that holds or not at a moment: a named probe over
// a target's objects.
type Condition struct {
	Probe  string            `yaml:"probe"`
	Target string            `yaml:"target"`
	Args   map[string]string `yaml:"args"`
	// Any makes the condition hold when one of the target's objects
	// satisfies the probe; by default all of them must.
	Any bool `yaml:"any"`
}
