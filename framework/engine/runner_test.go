package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// newScenario builds a scenario around the given steps, on target "victim"
// (vm-a), with every capability declared.
func newScenario(t *testing.T, steps string) *scenario.Scenario {
	t.Helper()
	return parseScenario(t, "[VMPower, VMLifecycle, VMNetwork]", "", `
    - name: victim
      select: {vm: vm-a}`, steps)
}

// parseScenario parses a scenario with the given requires, spec lines
// (such as safety), targets and steps.
func parseScenario(t *testing.T, requires, extra, targets, steps string) *scenario.Scenario {
	t.Helper()
	src := `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  requires: ` + requires + `
  pollInterval: 50ms
  timeout: 20s
` + extra + `
  targets:
` + targets + `
  steps:
` + steps
	s, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	return s
}

// holdSteps power the VM off and wait for what never happens, so a run
// is in flight until it is interrupted or times out.
const holdSteps = `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: wait-forever
      observe:
        phases:
          - {name: never, when: {probe: vm-suspended, target: victim}}
`

const powerCycle = `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: see-off
      observe:
        phases:
          - {name: vm-off, when: {probe: vm-powered-off, target: victim}, within: 5s}
    - name: on
      undo: {fault: off}
    - name: see-on
      observe:
        phases:
          - {name: vm-on, when: {probe: vm-powered-on, target: victim}, within: 5s, from: "undo:on"}
`

func run(t *testing.T, ctx context.Context, s *scenario.Scenario, p providers.Provider, opts ...func(*engine.RunInput)) (*engine.Result, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := engine.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := j.Close(); err != nil {
			t.Error(err)
		}
	})
	in := engine.RunInput{Scenario: s, Provider: p, Journal: j}
	for _, o := range opts {
		o(&in)
	}
	res, err := engine.Run(ctx, in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, path
}

func pending(t *testing.T, journal string) []engine.JournalEntry {
	t.Helper()
	entries, err := engine.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Pending(entries)
}

func TestRunPass(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a", "vm-b")
	tl := engine.NewTimeline(nil)
	res, journal := run(t, context.Background(), newScenario(t, powerCycle), p, func(in *engine.RunInput) { in.Timeline = tl })
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict = %s (%s), want pass", res.Verdict, res.Reason)
	}
	if len(res.Phases) != 2 || !res.Phases[0].OK || res.Phases[0].SinceInject == nil || res.Phases[1].From != "undo:on" {
		t.Errorf("phases = %+v", res.Phases)
	}
	if f := res.Faults[0]; f.ID != "off/vm-a" || f.InjectedAt == nil || f.UndoneAt == nil || f.Undo != "vm.power-on" {
		t.Errorf("fault = %+v", f)
	}
	checkCleanedUp(t, p, journal, providers.PoweredOn)
	if p.VM("vm-b").State != providers.PoweredOn || callsTo(p, "vm-b", "PowerOff") != 0 {
		t.Error("vm-b, not a target, was touched")
	}
	var whats []string
	for _, e := range tl.Events() {
		whats = append(whats, e.What)
	}
	got := strings.Join(whats, ",")
	for _, want := range []string{"fault-journaled,fault-injected", "phase-reached", "fault-undone", "run-finished"} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline %s lacks %s", got, want)
		}
	}
	if strings.Contains(got, "vm-powered-on") {
		t.Errorf("faultline's own undo was recorded as another hand's power-on: %s", got)
	}
}

// TestRunSeesOwnerPowerOn: a VM faultline powered off that its owner
// powers back on while the fault holds (CAPV reconciling a VM it finds
// off; here a goroutine in its place) is a timeline event of the
// provider's, vm-powered-on, before faultline's own undo.
func TestRunSeesOwnerPowerOn(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the owner
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for p.VM("vm-a").State != providers.PoweredOff {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		_ = p.PowerOn(ctx, providers.Object{Kind: "VirtualMachine", Name: "vm-a", ID: "vm-a"})
	}()
	sc := newScenario(t, `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: back
      observe:
        phases:
          - {name: back-on, when: {probe: vm-powered-on, target: victim}, within: 5s}
    - name: stays-on
      assert:
        consistently:
          condition: {probe: vm-powered-on, target: victim}
          for: 500ms
`)
	tl := engine.NewTimeline(nil)
	res, _ := run(t, context.Background(), sc, p, func(in *engine.RunInput) { in.Timeline = tl })
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict = %s (%s), want pass", res.Verdict, res.Reason)
	}
	var on, undone int
	for i, e := range tl.Events() {
		switch e.What {
		case "vm-powered-on":
			on = i
			if e.Source != "fake" || e.Details["id"] != "off/vm-a" || !strings.Contains(e.Details["by"], "not faultline") {
				t.Errorf("event %+v", e)
			}
		case "fault-undone":
			undone = i
		}
	}
	if on == 0 || on > undone {
		t.Errorf("vm-powered-on at %d, fault-undone at %d: want the owner's power-on recorded before the undo", on, undone)
	}
}

// checkCleanedUp checks what every run must leave: vm-a in state want (not
// checked when want is ""), and no fault pending in the journal.
func checkCleanedUp(t *testing.T, p *fake.Provider, journal string, want providers.PowerState) {
	t.Helper()
	if got := p.VM("vm-a").State; want != "" && got != want {
		t.Errorf("vm-a is %s after the run, want %s", got, want)
	}
	if n := len(pending(t, journal)); n != 0 {
		t.Errorf("%d journal entries pending after the run", n)
	}
}

func callsTo(p *fake.Provider, vm, method string) int {
	n := 0
	for _, c := range p.Calls() {
		if c.VM == vm && c.Method == method {
			n++
		}
	}
	return n
}

func TestRunVerdicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		steps       string
		setup       func(*fake.Provider)
		want        engine.Verdict
		wantReason  string
		wantVMState providers.PowerState
	}{
		{
			name: "phase over budget fails",
			steps: `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: see-off
      observe:
        phases:
          - {name: vm-off, when: {probe: vm-powered-off, target: victim}, within: 100ms}
`,
			setup:       func(p *fake.Provider) { p.Delay("PowerOff", 2*time.Second) },
			want:        engine.Fail,
			wantReason:  "phase vm-off not reached within its budget 100ms of inject",
			wantVMState: providers.PoweredOn,
		},
		{
			name: "never violated fails",
			steps: `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: never-off
      assert:
        never: {condition: {probe: vm-powered-off, target: victim}, for: 5s}
`,
			want:        engine.Fail,
			wantReason:  "assertion never-off: never vm-powered-off: vm-powered-off held after",
			wantVMState: providers.PoweredOn,
		},
		{
			name: "consistently holds passes",
			steps: `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: stays-off
      assert:
        consistently: {condition: {probe: vm-powered-off, target: victim}, for: 300ms}
`,
			want:        engine.Pass,
			wantVMState: providers.PoweredOn,
		},
		{
			name: "count too low fails",
			steps: `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: loop
      assert:
        count: {condition: {probe: vm-powered-on, target: victim}, for: 300ms, atLeast: 1}
`,
			want:        engine.Fail,
			wantReason:  "0 occurrence(s) of vm-powered-on",
			wantVMState: providers.PoweredOn,
		},
		{
			name: "count says what held before its window",
			steps: `
    - name: loop
      assert:
        count: {condition: {probe: vm-powered-on, target: victim}, for: 300ms, atLeast: 1}
`,
			want:        engine.Fail,
			wantReason:  "(1 matching object(s) already held at the window's first reading and are not counted)",
			wantVMState: providers.PoweredOn,
		},
		{
			name: "inject failure is an error and still undoes",
			steps: `
    - name: off
      inject: {fault: vm.power-off, target: victim}
`,
			setup: func(p *fake.Provider) {
				p.FailOn("PowerOff", "vm-a", errors.New("InvalidPowerState"))
				p.Set("vm-a", providers.PoweredOff) // half-applied
			},
			want:        engine.Error,
			wantReason:  "inject vm.power-off into VirtualMachine/vm-a: InvalidPowerState",
			wantVMState: providers.PoweredOn,
		},
		{
			// A VM someone else powered off: the refused power-off is
			// not undone (that would power on what another hand made).
			name: "inject refused is an error and undoes nothing",
			steps: `
    - name: off
      inject: {fault: vm.power-off, target: victim}
`,
			setup: func(p *fake.Provider) {
				p.FailOn("PowerOff", "vm-a", fmt.Errorf("vSphere fault InvalidPowerState: %w", providers.ErrInvalidState))
				p.Set("vm-a", providers.PoweredOff)
			},
			want:        engine.Error,
			wantReason:  "inject vm.power-off into VirtualMachine/vm-a: vSphere fault InvalidPowerState",
			wantVMState: providers.PoweredOff,
		},
		{
			name: "setup not met is an error, nothing injected",
			steps: `
    - name: baseline
      timeout: 200ms
      setup:
        require: [{probe: vm-powered-off, target: victim}]
    - name: off
      inject: {fault: vm.power-off, target: victim}
`,
			want:        engine.Error,
			wantReason:  "setup: vm-powered-off on target victim did not hold",
			wantVMState: providers.PoweredOn,
		},
		{
			name: "destroy has no undo",
			steps: `
    - name: gone
      inject: {fault: vm.destroy, target: victim}
    - name: see-gone
      observe:
        phases:
          - {name: vm-gone, when: {probe: vm-absent, target: victim}, within: 2s}
`,
			want: engine.Pass,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := fake.New("vm-a")
			if tt.setup != nil {
				tt.setup(p)
			}
			res, journal := run(t, context.Background(), newScenario(t, tt.steps), p)
			if res.Verdict != tt.want || !strings.Contains(res.Reason, tt.wantReason) {
				t.Errorf("verdict = %s (%s), want %s (%s)", res.Verdict, res.Reason, tt.want, tt.wantReason)
			}
			checkCleanedUp(t, p, journal, tt.wantVMState)
		})
	}
}

// TestRunCountsRecreationLoop counts a VM that something else keeps powering
// on and off, as a remediation loop would.
func TestRunCountsRecreationLoop(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	s := newScenario(t, `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: loop
      assert:
        count: {condition: {probe: vm-powered-on, target: victim}, for: 10s, atLeast: 2}
`)
	// The simulated controller flips the VM on and off until the run ends;
	// the assertion must count its power-ons.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 0; ctx.Err() == nil && i < 1000; i++ {
			p.Set("vm-a", map[bool]providers.PowerState{true: providers.PoweredOn, false: providers.PoweredOff}[i%2 == 0])
			select {
			case <-ctx.Done():
			case <-time.After(120 * time.Millisecond): // paces the simulated controller, not the test
			}
		}
	}()
	start := time.Now()
	res, _ := run(t, context.Background(), s, p)
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict = %s (%s), want pass", res.Verdict, res.Reason)
	}
	if !strings.Contains(res.Assertions[0].Message, "2 occurrence(s)") {
		t.Errorf("assertion = %q", res.Assertions[0].Message)
	}
	if time.Since(start) > 9*time.Second {
		t.Errorf("a satisfied lower bound did not end the window early")
	}
}

func TestRunInterruptedUndoes(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	s := newScenario(t, holdSteps)
	ctx, cancel := context.WithCancelCause(context.Background())
	res, journal := run(t, ctx, s, p, func(in *engine.RunInput) {
		in.Progress = func(engine.Progress) { cancel(errors.New("test interrupt")) }
	})
	// One clear line, and the phase it cut short is not missed.
	if res.Verdict != engine.Interrupted || res.Reason != "interrupted: test interrupt" {
		t.Errorf("verdict = %s (%q), want interrupted: test interrupt", res.Verdict, res.Reason)
	}
	if len(res.Phases) != 1 || res.Phases[0].Cut != engine.Interrupted || !strings.HasPrefix(res.Phases[0].Message, "not reached: interrupted after ") {
		t.Errorf("phases %+v, want never cut by the interruption", res.Phases)
	}
	checkCleanedUp(t, p, journal, providers.PoweredOn)
}

// A phase anchored on one the interruption cut short is cut with it, not
// failed for an anchor "never reached": JUnit skips both.
func TestRunInterruptedCutsAnchoredPhase(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	s := newScenario(t, holdSteps+`          - {name: later, when: {probe: vm-powered-on, target: victim}, from: "phase:never"}
`)
	ctx, cancel := context.WithCancelCause(context.Background())
	res, _ := run(t, ctx, s, p, func(in *engine.RunInput) {
		in.Progress = func(engine.Progress) { cancel(errors.New("test interrupt")) }
	})
	if res.Verdict != engine.Interrupted || res.Reason != "interrupted: test interrupt" {
		t.Errorf("verdict = %s (%q), want interrupted: test interrupt", res.Verdict, res.Reason)
	}
	if len(res.Phases) != 2 || res.Phases[1].Cut != engine.Interrupted || res.Phases[1].Message != "not reached: interrupted before its anchor phase:never" {
		t.Errorf("phases %+v, want later cut by the interruption", res.Phases)
	}
}

// A scenario whose timeout passes while a phase with no budget of its own
// waits is timed out, not failed, and its fault undone.
func TestRunTimedOut(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	s := parseScenario(t, "[VMPower]", "", `
    - name: victim
      select: {vm: vm-a}`, holdSteps)
	s.Spec.Timeout = scenario.D(300 * time.Millisecond)
	res, journal := run(t, context.Background(), s, p)
	if res.Verdict != engine.TimedOut || res.Reason != "timed out: the scenario's timeout, 300ms, passed" {
		t.Errorf("verdict = %s (%q), want timed-out", res.Verdict, res.Reason)
	}
	if len(res.Phases) != 1 || res.Phases[0].Cut != engine.TimedOut {
		t.Errorf("phases %+v, want never cut by the timeout", res.Phases)
	}
	checkCleanedUp(t, p, journal, providers.PoweredOn)
}

func TestRunRetainKeepsFaultPending(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	s := newScenario(t, `
    - name: off
      inject: {fault: vm.power-off, target: victim}
`)
	res, journal := run(t, context.Background(), s, p, func(in *engine.RunInput) { in.Retain = true })
	if res.Verdict != engine.Pass || res.Faults[0].Result != engine.ResultRetained {
		t.Errorf("verdict %s, fault %+v", res.Verdict, res.Faults[0])
	}
	if p.VM("vm-a").State != providers.PoweredOff {
		t.Error("retained fault was undone")
	}
	pend := pending(t, journal)
	if len(pend) != 1 || pend[0].Undo.Action != "vm.power-on" || pend[0].Target.Name != "vm-a" {
		t.Errorf("pending = %+v, want the power-off with its power-on undo", pend)
	}
}

// limited is a provider with no capability at all.
type limited struct{}

func (limited) Name() string { return "limited" }
func (limited) Resolve(context.Context, providers.Selector) ([]providers.Object, error) {
	return nil, nil
}

func TestRunSkipsWithoutCapability(t *testing.T) {
	t.Parallel()
	res, _ := run(t, context.Background(), newScenario(t, powerCycle), limited{})
	if res.Verdict != engine.Skipped || !strings.Contains(res.Reason, "provider limited lacks capability VMPower") {
		t.Errorf("verdict = %s (%s)", res.Verdict, res.Reason)
	}
}

// A scenario that says it cannot run on real nodes, run on a provider
// whose nodes are not simulated, is skipped with its reason before
// anything is touched.
func TestRunSkipsSimulatedOnlyOnRealNodes(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, "[VMPower]", `
  lab:
    controlPlanes: 1
    simulatedOnly: Calico's IPAM is simulated`, `
    - name: victim
      select: {vm: vm-a}`, powerCycle)
	s.Spec.Lab.Nodes = scenario.NodesContainers // as --nodes containers sets it
	p := fake.New("vm-a")
	res, _ := run(t, context.Background(), s, p)
	if res.Verdict != engine.Skipped || !strings.Contains(res.Reason, "lacks capability SimulatedNodes") || !strings.HasSuffix(res.Reason, ": Calico's IPAM is simulated") {
		t.Errorf("verdict = %s (%s)", res.Verdict, res.Reason)
	}
	if p.VM("vm-a").State != providers.PoweredOn {
		t.Error("the skipped run powered the VM off")
	}
}

func TestRunTargetNotFound(t *testing.T) {
	t.Parallel()
	res, _ := run(t, context.Background(), newScenario(t, powerCycle), fake.New("vm-z"))
	if res.Verdict != engine.Error || !strings.Contains(res.Reason, "resolve target victim: no object matches the selector (t.yaml:1") {
		t.Errorf("verdict = %s (%s)", res.Verdict, res.Reason)
	}
}

// A count is how many objects to pick: one larger than what the selector
// matches is an error before anything is injected, not a quiet "all".
func TestRunCountLargerThanMatches(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, "[VMPower, VMLifecycle, VMNetwork]", "", `
    - name: victim
      select: {vm: "vm-*"}
      count: 1000`, powerCycle)
	p := fake.New("vm-a", "vm-b")
	res, journal := run(t, context.Background(), s, p)
	if res.Verdict != engine.Error || !strings.Contains(res.Reason, "resolve target victim: count is 1000 (t.yaml:13), but the selector matches 2 object(s)") {
		t.Errorf("verdict = %s (%s)", res.Verdict, res.Reason)
	}
	if p.VM("vm-a").State != providers.PoweredOn || p.VM("vm-b").State != providers.PoweredOn || len(pending(t, journal)) != 0 {
		t.Error("a VM was powered off")
	}
}

// An undo that fails leaves its entry pending, and the result says the
// exact command that undoes it.
func TestRunUndoFailureNamesRecover(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	p.FailOn("PowerOn", "vm-a", errors.New("host unreachable"))
	res, journal := run(t, context.Background(), newScenario(t, powerCycle), p)
	if want := "still pending in journal " + journal + "; undo it with: faultline recover " + journal; res.Verdict != engine.Error || !strings.Contains(res.Reason, want) {
		t.Errorf("verdict = %s (%s), want an error saying %q", res.Verdict, res.Reason, want)
	}
	if len(pending(t, journal)) != 1 {
		t.Errorf("the failed undo is not pending in the journal")
	}
}

func TestRunInputValidate(t *testing.T) {
	t.Parallel()
	_, err := engine.Run(context.Background(), engine.RunInput{})
	if err == nil || !strings.Contains(err.Error(), "journal is required") {
		t.Errorf("Run with empty input = %v", err)
	}
}

// A dry run resolves the targets (a random pick with the run's seed) and
// says what each inject step would do where; it injects nothing and
// journals nothing.
func TestRunDryRun(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, "[VMPower]", "", `
    - name: victim
      select: {vm: "vm-*"}
      count: 1
      random: {}`, powerCycle)
	p := fake.New("vm-a", "vm-b", "vm-c")
	seed := int64(42)
	var picks []string
	for range 2 {
		res, journal := run(t, context.Background(), s, p, func(in *engine.RunInput) { in.DryRun, in.Seed = true, &seed })
		if res.Verdict != engine.Pass || res.Reason != "dry run: nothing was injected" {
			t.Fatalf("verdict %s (%s)", res.Verdict, res.Reason)
		}
		if len(res.Planned) != 1 || res.Planned[0].Fault != "vm.power-off" || len(res.Planned[0].Objects) != 1 {
			t.Fatalf("planned %+v", res.Planned)
		}
		if got := *res.Targets[0].Seed; got != seed {
			t.Errorf("seed %d, want the run's %d", got, seed)
		}
		if len(res.Faults) != 0 || len(res.Phases) != 0 || len(pending(t, journal)) != 0 {
			t.Errorf("a dry run acted: faults %+v, phases %+v", res.Faults, res.Phases)
		}
		picks = append(picks, res.Planned[0].Objects[0])
	}
	if picks[0] != picks[1] {
		t.Errorf("the same seed picked %s, then %s", picks[0], picks[1])
	}
	for _, vm := range []string{"vm-a", "vm-b", "vm-c"} {
		if p.VM(vm).State != providers.PoweredOn {
			t.Errorf("%s was powered off by a dry run", vm)
		}
	}
}

// A fault that cannot be undone (a destroyed VM) ends as "none", with no
// undo time: nothing was done at the end.
func TestRunDestroyHasNoUndo(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, "[VMLifecycle]", "", `
    - name: victim
      select: {vm: vm-a}`, `
    - name: gone
      inject: {fault: vm.destroy, target: victim}
`)
	res, _ := run(t, context.Background(), s, fake.New("vm-a"))
	if len(res.Faults) != 1 || res.Faults[0].Result != engine.ResultNone || res.Faults[0].UndoneAt != nil {
		t.Errorf("faults %+v, want one with result none and no undo time", res.Faults)
	}
}

// A target resolved after a step picks from what is there once the step
// has ended: after vm-a is destroyed, vm-* is vm-b alone, where before
// the first step it was both.
func TestRunResolvesTargetAfterStep(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, "[VMPower, VMLifecycle]", "", `
    - name: victim
      select: {vm: vm-a}
    - name: before
      select: {vm: "vm-*"}
    - name: left
      select: {vm: "vm-*"}
      after: gone`, `
    - name: gone
      inject: {fault: vm.destroy, target: victim}
    - name: rest-on
      observe:
        phases:
          - {name: left-on, when: {probe: vm-powered-on, target: left}, within: 5s}
`)
	tl := engine.NewTimeline(nil)
	res, _ := run(t, context.Background(), s, fake.New("vm-a", "vm-b"), func(in *engine.RunInput) { in.Timeline = tl })
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict %s (%s), want pass", res.Verdict, res.Reason)
	}
	got := map[string]string{}
	for _, tr := range res.Targets {
		got[tr.Name] = strings.Join(tr.Objects, ",") + " after " + tr.After
	}
	want := map[string]string{"victim": "VirtualMachine/vm-a after ", "before": "VirtualMachine/vm-a,VirtualMachine/vm-b after ", "left": "VirtualMachine/vm-b after gone"}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("target %s: %q, want %q", name, got[name], w)
		}
	}
	var order []string
	for _, e := range tl.Events() {
		if e.What == "target-resolved" || e.What == "fault-injected" {
			order = append(order, e.What+" "+e.Object)
		}
	}
	if w := "target-resolved target/victim,target-resolved target/before,fault-injected VirtualMachine/vm-a,target-resolved target/left"; strings.Join(order, ",") != w {
		t.Errorf("timeline order %v, want %s", order, w)
	}
}

// preflightProvider is the fake whose Preflight refuses the objects named
// in unreachable, as capi does for a Machine whose VM it cannot find.
type preflightProvider struct {
	*fake.Provider
	unreachable map[string]bool
}

func (p preflightProvider) Preflight(_ context.Context, c providers.Capability, obj providers.Object) error {
	if p.unreachable[obj.Name] {
		return fmt.Errorf("%s for %s: %w", c, obj.Name, providers.ErrNotFound)
	}
	return nil
}

// A target whose fault could not reach what it acts on ends the run, dry
// or real, before anything is journaled or applied.
func TestRunPreflight(t *testing.T) {
	t.Parallel()
	for _, dry := range []bool{true, false} {
		p := preflightProvider{fake.New("vm-a"), map[string]bool{"vm-a": true}}
		res, journal := run(t, context.Background(), newScenario(t, powerCycle), p, func(in *engine.RunInput) { in.DryRun = dry })
		if res.Verdict != engine.Error || !strings.Contains(res.Reason, "before the first fault: step off: fault vm.power-off on VirtualMachine/vm-a: VMPower for vm-a: not found") {
			t.Errorf("dry %t: verdict %s (%s), want error naming the step and the object", dry, res.Verdict, res.Reason)
		}
		entries, err := engine.ReadJournal(journal)
		if err != nil || len(entries) != 0 {
			t.Errorf("dry %t: journaled %+v (%v)", dry, entries, err)
		}
		if calls := p.Calls(); len(calls) != 0 {
			t.Errorf("dry %t: the provider was called: %+v", dry, calls)
		}
	}
}

// flakyPower is the fake whose power-state reads fail after the first
// ok ones, as a vCenter that starts refusing requests.
type flakyPower struct {
	*fake.Provider
	mu sync.Mutex
	ok int
}

func (p *flakyPower) PowerState(ctx context.Context, o providers.Object) (providers.PowerState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ok == 0 {
		return "", errors.New("ServerFaultCode: connection reset")
	}
	p.ok--
	return p.Provider.PowerState(ctx, o)
}

// A window that must hold throughout, read only in part, proves nothing:
// a consistently whose readings fail after the first is an error, and so
// is a never; a guard's is not ok.
func TestRunWindowOfErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, steps, want string
		ok                int
	}{
		{"consistently", `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: stays-off
      assert:
        consistently: {condition: {probe: vm-powered-off, target: victim}, for: 500ms}
`, "assert stays-off: consistently vm-powered-off is unproven: ", 1},
		{"never", `
    - name: on-stays
      assert:
        never: {condition: {probe: vm-powered-off, target: victim}, for: 500ms}
`, "assert on-stays: never vm-powered-off is unproven: ", 1},
		{"guard", `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: watch
      observe:
        while:
          - {name: stays-off, condition: {probe: vm-powered-off, target: victim}}
        phases:
          - {name: later, when: {probe: vm-suspended, target: victim}, within: 500ms}
`, "while vm-powered-off: unproven: ", 2}, // the guard's first reading and the phase's
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &flakyPower{Provider: fake.New("vm-a"), ok: tc.ok}
			res, _ := run(t, context.Background(), newScenario(t, tc.steps), p)
			said := res.Reason
			for _, a := range res.Assertions {
				if !a.OK {
					said += "; " + a.Message
				}
			}
			if res.Verdict == engine.Pass || !strings.Contains(said, tc.want) {
				t.Errorf("verdict %s (%s), want not pass: %s", res.Verdict, said, tc.want)
			}
		})
	}
}

// inFlightPower is the fake whose first power-on is a task that lands
// after its caller stopped waiting (a signal during an undo), and whose
// next is refused, as vCenter refuses a power-on while another runs.
type inFlightPower struct {
	*fake.Provider
	mu      sync.Mutex
	calls   int
	started chan struct{}
}

func (p *inFlightPower) PowerOn(ctx context.Context, o providers.Object) error {
	p.mu.Lock()
	p.calls++
	first := p.calls == 1
	p.mu.Unlock()
	if !first {
		return fmt.Errorf("vSphere fault InvalidPowerState: %w", providers.ErrInvalidState)
	}
	time.AfterFunc(300*time.Millisecond, func() { p.Set(o.Name, providers.PoweredOn) })
	close(p.started)
	<-ctx.Done()
	return ctx.Err()
}

// A signal while an undo's power-on is in flight: the clean-up finds it
// landed, and the fault is undone, not failed.
func TestRunSignalDuringUndo(t *testing.T) {
	t.Parallel()
	p := &inFlightPower{Provider: fake.New("vm-a"), started: make(chan struct{})}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		<-p.started
		cancel(errors.New("interrupt signal received"))
	}()
	res, journal := run(t, ctx, newScenario(t, powerCycle), p)
	if res.Verdict != engine.Interrupted || res.Reason != "interrupted: interrupt signal received" {
		t.Errorf("verdict %s (%q), want interrupted", res.Verdict, res.Reason)
	}
	if len(res.Faults) != 1 || res.Faults[0].Result != engine.ResultUndone {
		t.Errorf("faults %+v, want the power-off undone", res.Faults)
	}
	checkCleanedUp(t, p.Provider, journal, providers.PoweredOn)
}

// A VM its owner powered back on before the undo (as CAPV does) is not
// powered on again: the fault is undone with nothing done, and says so.
func TestRunNothingToUndo(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	s := newScenario(t, `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: owner-powers-on
      observe:
        phases:
          - {name: vm-on, when: {probe: vm-powered-on, target: victim}, within: 5s}
`)
	res, journal := run(t, context.Background(), s, p, func(in *engine.RunInput) {
		in.OnEvent = func(e engine.Event) {
			if e.What == "fault-injected" {
				go p.Set("vm-a", providers.PoweredOn)
			}
		}
	})
	if res.Verdict != engine.Pass || len(res.Faults) != 1 || res.Faults[0].Result != engine.ResultUndone ||
		res.Faults[0].Note != "nothing to undo: the VM is powered on already" {
		t.Errorf("verdict %s (%s), faults %+v", res.Verdict, res.Reason, res.Faults)
	}
	if n := callsTo(p, "vm-a", "PowerOn"); n != 0 {
		t.Errorf("PowerOn called %d times on a VM already on", n)
	}
	checkCleanedUp(t, p, journal, providers.PoweredOn)
}

// Two runs on one VM: the second refuses before it journals or touches
// anything, naming the run that holds it; once the first has undone its
// fault, the target is free again.
func TestRunLeasesTargets(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	leases := t.TempDir()
	hold := newScenario(t, holdSteps)
	ctx, cancel := context.WithCancel(context.Background())
	injected := make(chan struct{})
	first := make(chan *engine.Result, 1)
	go func() {
		res, _ := run(t, ctx, hold, p, func(in *engine.RunInput) {
			in.Leases = leases
			in.OnEvent = func(e engine.Event) {
				if e.What == "fault-injected" {
					close(injected)
				}
			}
		})
		first <- res
	}()
	select {
	case <-injected:
	case <-time.After(10 * time.Second):
		t.Fatal("the first run did not inject")
	}
	res, journal := run(t, context.Background(), newScenario(t, powerCycle), p, func(in *engine.RunInput) { in.Leases = leases })
	if res.Verdict != engine.Error || !strings.Contains(res.Reason, "target held by another run: VirtualMachine/vm-a is held by the run of scenario t (pid ") {
		t.Errorf("second run: %s (%s), want refused naming the holder", res.Verdict, res.Reason)
	}
	if entries, err := engine.ReadJournal(journal); err != nil || len(entries) != 0 {
		t.Errorf("second run journaled %+v (%v)", entries, err)
	}
	if n := callsTo(p, "vm-a", "PowerOn"); n != 0 {
		t.Errorf("the second run powered the first one's VM on %d times", n)
	}
	cancel()
	if res := <-first; res.Verdict != engine.Interrupted {
		t.Errorf("first run: %s (%s)", res.Verdict, res.Reason)
	}
	if res, _ := run(t, context.Background(), newScenario(t, powerCycle), p, func(in *engine.RunInput) { in.Leases = leases }); res.Verdict != engine.Pass {
		t.Errorf("after the first run: %s (%s), want the target free", res.Verdict, res.Reason)
	}
}

// Refused credentials do not come back by waiting: a baseline whose probe
// is refused (vCenter's NotAuthenticated after a failed re-login) is an
// error at once, not after the scenario's 20 s timeout.
func TestRunNotAuthenticatedEndsWait(t *testing.T) {
	t.Parallel()
	p := fake.New("vm-a")
	p.FailOn("PowerState", "vm-a", fmt.Errorf("vSphere fault NotAuthenticated: %w", providers.ErrNotAuthenticated))
	s := newScenario(t, `
    - name: baseline
      setup:
        require: [{probe: vm-powered-on, target: victim}]
    - name: off
      inject: {fault: vm.power-off, target: victim}
`)
	started := time.Now()
	res, _ := run(t, context.Background(), s, p)
	if res.Verdict != engine.Error || !strings.Contains(res.Reason, "not authenticated") || time.Since(started) > 5*time.Second {
		t.Errorf("verdict %s (%s) after %s, want an error at once", res.Verdict, res.Reason, time.Since(started).Round(time.Millisecond))
	}
	if n := callsTo(p, "vm-a", "PowerOff"); n != 0 {
		t.Errorf("injected %d times past a refused baseline", n)
	}
}

// unconfigured is the fake with its VM power left unusable as it was
// opened (capi with no vCenter).
type unconfigured struct{ *fake.Provider }

func (unconfigured) CapabilityUnavailable(c providers.Capability) error {
	if c == providers.CapVMPower {
		return fmt.Errorf("no vCenter is configured: %w (%w)", providers.ErrUnsupported, providers.ErrNotConfigured)
	}
	return nil
}

// A capability the provider has but was opened without is an error (the
// run could not reach what it was pointed at), not a skip; nothing is
// journaled.
func TestRunErrsWhenNotConfigured(t *testing.T) {
	t.Parallel()
	p := unconfigured{fake.New("vm-a")}
	for _, dry := range []bool{true, false} {
		res, journal := run(t, context.Background(), newScenario(t, powerCycle), p, func(in *engine.RunInput) { in.DryRun = dry })
		if res.Verdict != engine.Error || !strings.Contains(res.Reason, "no vCenter is configured") || strings.Contains(res.Reason, "\n") {
			t.Errorf("dry %t: verdict %s (%s), want error", dry, res.Verdict, res.Reason)
		}
		if entries, err := engine.ReadJournal(journal); err != nil || len(entries) != 0 {
			t.Errorf("dry %t: journaled %+v (%v)", dry, entries, err)
		}
	}
}

// A phase anchored on another phase of the same step starts when that one
// is reached, woken by it, not by polling: with a poll interval far longer
// than the test's deadline, the run still ends, and the second phase's
// anchor is the first's time.
func TestRunPhaseAnchoredOnPhaseWakes(t *testing.T) {
	t.Parallel()
	s := powerOffObserved(t, `
          - {name: vm-off, when: {probe: vm-powered-off, target: victim}, within: 5s}
          - {name: still-off, when: {probe: vm-powered-off, target: victim}, within: 5s, from: "phase:vm-off"}
`)
	s.Spec.PollInterval = scenario.D(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, _ := run(t, ctx, s, fake.New("vm-a"))
	if res.Verdict != engine.Pass || len(res.Phases) != 2 {
		t.Fatalf("verdict = %s (%s), phases %+v", res.Verdict, res.Reason, res.Phases)
	}
	first, second := res.Phases[0], res.Phases[1]
	if first.ObservedAt == nil || second.AnchorAt == nil || !second.AnchorAt.Equal(*first.ObservedAt) {
		t.Errorf("still-off anchored at %v, want vm-off's time %v", second.AnchorAt, first.ObservedAt)
	}
}

// powerOffObserved is a scenario that powers vm-a off and watches phases
// (YAML list items) in one observe step.
func powerOffObserved(t *testing.T, phases string) *scenario.Scenario {
	t.Helper()
	return parseScenario(t, "[VMPower]", "", `
    - name: victim
      select: {vm: vm-a}`, `
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: see-off
      observe:
        phases:`+phases)
}
