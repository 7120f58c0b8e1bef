package scenario_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"

	"github.com/faultline-dev/faultline/framework/scenario"
)

// valid is a small scenario every bad-input case below breaks in one place.
const valid = `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata:
  name: t
spec:
  requires: [VMPower]
  parameters:
    budget: 30s
  targets:
    - name: victim
      select:
        vm: vm-a
  steps:
    - name: off
      inject:
        fault: vm.power-off
        target: victim
    - name: see
      observe:
        phases:
          - name: vm-off
            when:
              probe: vm-powered-off
              target: victim
            within: ${budget}
    - name: check
      assert:
        within:
          phase: vm-off
          budget: 1m
`

func TestParseValid(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse("t.yaml", []byte(valid), map[string]string{"budget": "45s"}, engine.Vocabulary)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := s.Spec.Steps[1].Observe.Phases[0].Within.Duration; got != 45*time.Second {
		t.Errorf("within after --set budget=45s = %s, want 45s", got)
	}
	if got := s.Spec.Steps[2].Assert.Within.Budget.Duration; got != time.Minute {
		t.Errorf("assert budget = %s, want 1m", got)
	}
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		old, new string
		// old2/new2 is a second replacement, for cases that need two.
		old2, new2 string
		overrides  map[string]string
		want       string // substring of the error, including file:line:col
	}{
		{name: "unknown field", old: "      inject:\n        fault:", new: "      inject:\n        faul: x\n        fault:",
			want: `t.yaml:16:9: spec.steps[0].inject.faul: unknown field "faul"; expected one of fault, params, target`},
		{name: "wrong type", old: "name: victim", new: "name: [victim]",
			want: "t.yaml:10:13: spec.targets[0].name: expected a string, got a list"},
		{name: "negative budget", old: "budget: 1m", new: "budget: -1m",
			want: "t.yaml:30:19: spec.steps[2].assert.within.budget: duration -1m is negative"},
		{name: "bare number budget", old: "budget: 1m", new: "budget: 60",
			want: "spec.steps[2].assert.within.budget: bare number 60 is not a duration; write it with a unit, such as 60s"},
		{name: "unknown fault", old: "fault: vm.power-off", new: "fault: vm.melt",
			want: `t.yaml:16:9: spec.steps[0].inject.fault: unknown fault "vm.melt"; expected one of etcd.slow-member-start, etcd.stuck-leader, host.fail, host.maintenance, node.remove-static-pod, node.stop-etcd, node.stop-kubelet, object.apply, object.delete, object.scale, upgrade.kubernetes, upgrade.management, vcenter.unreachable, vm.destroy`},
		{name: "missing target", old: "        target: victim\n    - name: see", new: "    - name: see",
			want: "spec.steps[0].inject.target: required: the name of a target in spec.targets"},
		{name: "unknown target", old: "        target: victim\n    - name: see", new: "        target: nobody\n    - name: see",
			want: `t.yaml:17:9: spec.steps[0].inject.target: unknown target "nobody"; spec.targets defines: victim`},
		{name: "within unknown phase", old: "phase: vm-off", new: "phase: vm-of",
			want: `t.yaml:29:11: spec.steps[2].assert.within.phase: unknown phase "vm-of"; phases defined before this step: vm-off`},
		{name: "capability not declared", old: "requires: [VMPower]", new: "requires: []",
			want: "spec.steps[0].inject.fault: fault vm.power-off needs capability VMPower; add it to spec.requires"},
		{name: "unknown capability", old: "requires: [VMPower]", new: "requires: [VMPower, Teleport]",
			want: `t.yaml:6:23: spec.requires[1]: unknown capability "Teleport"`},
		{name: "wrong apiVersion", old: "faultline.dev/v1alpha1", new: "faultline.dev/v2",
			want: `t.yaml:1:1: apiVersion: got "faultline.dev/v2", expected "faultline.dev/v1alpha1"`},
		{name: "unknown parameter reference", old: "within: ${budget}", new: "within: ${budgt}",
			want: `t.yaml:25:21: spec.steps[1].observe.phases[0].within: unknown parameter "budgt"`},
		{name: "unknown --set", old: "", new: "", overrides: map[string]string{"nope": "1"},
			want: "t.yaml: --set nope: the scenario declares no such parameter; declared: budget"},
		{name: "two step kinds", old: "      inject:\n", new: "      undo:\n        all: true\n      inject:\n",
			want: "spec.steps[0]: a step has exactly one of setup, inject, observe, assert, undo, teardown; found 2"},
		{name: "duplicate step", old: "- name: see", new: "- name: off",
			want: `spec.steps[1].name: step "off" is defined twice`},
		{name: "bad anchor", old: "within: ${budget}", new: "within: ${budget}\n            from: phase:later",
			want: `spec.steps[1].observe.phases[0].from: anchor "phase:later": no phase "later" before this one`},
		{name: "invalid YAML", old: "kind: Scenario", new: "kind: [Scenario",
			want: "t.yaml:3:1: invalid YAML: ',' or ']' must be specified"},
		// A tab where indentation is: the line and column of the tab.
		{name: "tab", old: "kind: Scenario", new: "kind: Scenario\n\tx: 1",
			want: `t.yaml:3:1: invalid YAML: found character '\t' that cannot start any token`},
		{name: "count and percent", old: "        vm: vm-a", new: "        vm: vm-a\n      count: 1\n      percent: 50",
			want: "spec.targets[0].percent: set count or percent, not both"},
		{name: "unknown probe arg", old: "              target: victim\n            within", new: "              target: victim\n              args: {colour: red}\n            within",
			want: `spec.steps[1].observe.phases[0].when.args.colour: unknown parameter "colour"; expected: none`},
		{name: "after an unknown step", old: "        vm: vm-a\n", new: "        vm: vm-a\n    - name: later\n      after: nowhere\n      select:\n        vm: vm-b\n",
			want: `spec.targets[1].after: no step "nowhere"; after names the step once which the target is resolved`},
		{name: "a fault on a target resolved after a step", old: "        vm: vm-a\n", new: "        vm: vm-a\n    - name: later\n      after: see\n      select:\n        vm: vm-b\n",
			old2: "        target: victim\n", new2: "        target: later\n",
			want: `spec.steps[0].inject.target: target "later" is resolved after step "see", to observe what that step made; a fault acts on a target resolved before the first step`},
		{name: "a target read before its step ended", old: "        vm: vm-a\n", new: "        vm: vm-a\n    - name: later\n      after: see\n      select:\n        vm: vm-b\n",
			old2: "              target: victim\n", new2: "              target: later\n",
			want: `spec.steps[1].observe.phases[0].when.target: target "later" is resolved once step "see" has ended; only the steps after it read it`},
		{name: "exclude unknown target", old: "        vm: vm-a", new: "        vm: vm-a\n      exclude: [victim, nobody]",
			want: `t.yaml:13:25: spec.targets[0].exclude[1]: unknown target "nobody"; exclude names a target defined before this one: none`},
		{name: "static pod component", old: "requires: [VMPower]", new: "requires: [VMPower, NodeStaticPods]",
			old2: "        fault: vm.power-off", new2: "        fault: node.remove-static-pod\n        params: {component: kubelet}",
			want: `spec.steps[0].inject.params.component: got "kubelet", expected one of etcd, kube-apiserver, kube-controller-manager, kube-scheduler`},
		{name: "second document", old: "", new: "", want: "a second YAML document"},
		{name: "standalone object fault needs the management cluster", old: "        fault: vm.power-off\n        target: victim", new: "        fault: object.delete\n        params: {apiVersion: v1, kind: ConfigMap, name: x}",
			old2: "requires: [VMPower]", new2: "requires: [VMPower, ObjectWrites]",
			want: "spec.steps[0].inject.target: required: the target whose workload cluster the objects are in; without a target, set params.cluster: management"},
		{name: "NUL byte", old: "name: t", new: "name: t\x00",
			want: "t.yaml:4:10: character U+0000: a scenario is YAML text"},
		{name: "not UTF-8", old: "name: t", new: "name: t\xff",
			want: "t.yaml:4:10: bytes that are not UTF-8"},
		{name: "long name cut", old: "name: t", new: "name: " + strings.Repeat("X", 200000),
			want: `metadata.name: "` + strings.Repeat("X", 120) + `...(200000 bytes)" must be lower-case`},
		{name: "count larger than the lab", old: "requires: [VMPower]", new: "requires: [VMPower, ClusterAPI]\n  lab: {controlPlanes: 3, workers: 2}",
			old2: "        vm: vm-a", new2: "        role: worker\n      count: 3",
			want: "t.yaml:14:7: spec.targets[0].count: 3, but spec.lab has 2 worker Machine(s) for it to pick from; expected at most 2"},
		{name: "role the lab has none of", old: "requires: [VMPower]", new: "requires: [VMPower, ClusterAPI]\n  lab: {controlPlanes: 1, workers: 0}",
			old2: "        vm: vm-a", new2: "        role: worker",
			want: "spec.targets[0].select: selects no Machine: spec.lab has 0 worker Machines"},
		{name: "quorum loss known from spec.lab", old: "requires: [VMPower]", new: "requires: [VMPower, ClusterAPI]\n  lab: {controlPlanes: 3, workers: 2}",
			old2: "        vm: vm-a", new2: "        role: control-plane\n      count: 2",
			want: "t.yaml:17:7: spec.steps[0].inject: would have at least 2 of the lab's 3 etcd members down at once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(valid, tt.old, tt.new, 1)
			src = strings.Replace(src, tt.old2, tt.new2, 1)
			if tt.name == "second document" {
				src += "---\nkind: Scenario\n"
			} else if tt.old != "" && src == valid {
				t.Fatalf("test case does not change the scenario")
			}
			_, err := scenario.Parse("t.yaml", []byte(src), tt.overrides, engine.Vocabulary)
			var ve *scenario.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse error = %v, want a *ValidationError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tt.want)
			}
		})
	}
}

func TestLoadCatalogueFile(t *testing.T) {
	t.Parallel()
	s, err := scenario.Load(filepath.Join("..", "..", "scenarios", "vm-power-cycle.yaml"), nil, engine.Vocabulary)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Metadata.Name != "vm-power-cycle" {
		t.Errorf("name = %q", s.Metadata.Name)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := scenario.Load(filepath.Join(t.TempDir(), "nope.yaml"), nil, engine.Vocabulary)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file = %v, want os.ErrNotExist", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte("apiVersion: [\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte(laughs))
	f.Add([]byte("spec:\n  parameters: {x: '${x}'}\n  steps: [{name: '${x}'}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// A hang is a bug the fuzzer cannot save on its own: turn it into
		// a crash, which it records as a failing input.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic(fmt.Sprintf("Parse still running after 10s on %q", data))
			}
		}()
		s, err := scenario.Parse("fuzz.yaml", data, nil, engine.Vocabulary)
		if err == nil && s == nil {
			t.Fatal("nil scenario without error")
		}
		var ve *scenario.ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Fatalf("error is %T, want *ValidationError: %v", err, err)
		}
	})
}

// laughs nests aliases ten deep, ten wide: 10^10 nodes if expanded.
const laughs = `apiVersion: &a [x, x, x, x, x, x, x, x, x, x]
kind: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
metadata: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
spec: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
x1: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
x2: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
x3: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
x4: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
x5: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
x6: [*i, *i, *i, *i, *i, *i, *i, *i, *i, *i]
`

func TestParseAliasBomb(t *testing.T) {
	t.Parallel()
	_, err := scenario.Parse("bomb.yaml", []byte(laughs), nil, engine.Vocabulary)
	var ve *scenario.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("alias bomb: %v, want a *ValidationError", err)
	}
}

func BenchmarkParse(b *testing.B) {
	data := []byte(valid)
	for b.Loop() {
		if _, err := scenario.Parse("t.yaml", data, nil, engine.Vocabulary); err != nil {
			b.Fatal(err)
		}
	}
}

// Every problem of a file is reported in one pass, a decode error beside
// the semantic ones, each misspelt name with the nearest known one; a
// field that did not decode gets no second error.
func TestParseReportsEveryProblemOnce(t *testing.T) {
	t.Parallel()
	src := strings.Replace(valid, "fault: vm.power-off", "fault: vm.power-of", 1)
	src = strings.Replace(src, "budget: 1m", "budget: soon", 1)
	src = strings.Replace(src, "  targets:", "  pollIntervall: 1s\n  targets:", 1)
	_, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
	var ve *scenario.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse error = %v, want a *ValidationError", err)
	}
	want := []string{
		`unknown field "pollIntervall"; expected one of`,
		`did you mean "pollInterval"?`,
		`unknown fault "vm.power-of"; expected one of`,
		`did you mean "vm.power-off"?`,
		`spec.steps[2].assert.within.budget: "soon" is not a duration`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error:\n%v\nwant it to contain: %s", err, w)
		}
	}
	if n := strings.Count(err.Error(), "within.budget"); n != 1 {
		t.Errorf("the budget that did not decode is reported %d times:\n%v", n, err)
	}
}

// The first limit hit is the one problem reported: 10,000 steps over the
// node budget give the budget's error alone, not thousands of false
// "required" errors for what was left undecoded. And a parameter whose
// value refers to parameters (two that refer to each other never end) is
// refused where it is declared.
func TestParseStopsAtLimits(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(valid)
	for i := range 10000 {
		fmt.Fprintf(&b, "    - name: s%d\n      undo: {fault: off}\n", i)
	}
	_, err := scenario.Parse("t.yaml", []byte(b.String()), nil, engine.Vocabulary)
	var ve *scenario.ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) != 1 || !strings.Contains(ve.Errors[0].Msg, "more than 20000 nodes once aliases are expanded") {
		n := 0
		if ve != nil {
			n = len(ve.Errors)
		}
		t.Fatalf("%d errors, want the node budget's alone; first: %.300v", n, err)
	}
	loop := strings.Replace(valid, "    budget: 30s\n", "    budget: 30s\n    vm: ${other}\n    other: ${vm}\n", 1)
	_, err = scenario.Parse("t.yaml", []byte(loop), nil, engine.Vocabulary)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:9:9: spec.parameters.vm: a parameter's value may not refer to a parameter (${other})") {
		t.Errorf("a parameter loop: %v", err)
	}
}

// A file of brackets nested 20 000 deep is refused naming it, in memory
// that does not grow with the square of the nesting: the second YAML
// parser, asked only to place an error, is not asked about such a file
// (it allocated about 600 MB for this one, and 15 GB for 100 000 levels).
// Not parallel: the allocations counted are the whole process's.
func TestParseDeepNestingBounded(t *testing.T) {
	data := []byte("apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nspec: " + strings.Repeat("[", 20000) + "\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := scenario.Parse("deep.yaml", data, nil, engine.Vocabulary)
	runtime.ReadMemStats(&after)
	var ve *scenario.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "deep.yaml:") {
		t.Fatalf("nested brackets: %v, want a *ValidationError naming deep.yaml", err)
	}
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 64 {
		t.Errorf("parsing %d bytes allocated %d MB", len(data), mb)
	}
}
