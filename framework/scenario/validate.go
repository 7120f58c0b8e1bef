package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/faultline-dev/faultline/providers"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// validator checks what the types alone cannot: references between steps,
// phases and targets, and that every fault and probe is known and declared.
type validator struct {
	s     *Scenario
	vocab Vocabulary
	errs  []FieldError

	targets map[string]bool
	// after maps a target resolved after a step to that step; ended
	// holds the steps validated so far, which end before the current one.
	after    map[string]string
	ended    map[string]bool
	requires map[providers.Capability]bool
	// Anchors and phases defined so far, in step order: a reference must
	// point backwards.
	injects map[string]bool
	undos   map[string]bool
	phases  map[string]bool
}

func validate(s *Scenario, vocab Vocabulary) []FieldError {
	v := &validator{s: s, vocab: vocab, targets: map[string]bool{}, after: map[string]string{}, ended: map[string]bool{}, requires: map[providers.Capability]bool{},
		injects: map[string]bool{}, undos: map[string]bool{}, phases: map[string]bool{}}
	v.header()
	v.spec()
	return v.errs
}

func (v *validator) errf(path, format string, args ...any) {
	v.err(path, fmt.Sprintf(format, shown(args)...))
}

// err adds msg as it is: a message that already cut what it repeats from
// the file (labconfig.Shown), whose own words, such as the list of what
// is expected, must not be cut.
func (v *validator) err(path, msg string) {
	v.errs = append(v.errs, FieldError{File: v.s.Source, Pos: v.pos(path), Field: path, Msg: msg})
}

// pos finds the position of path or of its nearest recorded parent, so that
// a missing field points at the mapping that should hold it.
func (v *validator) pos(path string) Pos {
	for p := path; ; {
		if pos, ok := v.s.positions[p]; ok {
			return pos
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return Pos{Line: 1, Column: 1}
		}
		p = p[:i]
	}
}

func (v *validator) header() {
	if v.s.APIVersion != APIVersion {
		v.errf("apiVersion", "got %q, expected %q", v.s.APIVersion, APIVersion)
	}
	if v.s.Kind != Kind {
		v.errf("kind", "got %q, expected %q", v.s.Kind, Kind)
	}
	m := v.s.Metadata
	if m.Name == "" {
		v.errf("metadata.name", "required: a lower-case name such as power-off-worker")
	} else if !dnsLabel.MatchString(m.Name) || len(m.Name) > 63 {
		v.errf("metadata.name", "%q must be lower-case letters, digits and '-', at most 63 characters", m.Name)
	}
	for i, r := range m.References {
		path := fmt.Sprintf("metadata.references[%d]", i)
		switch r.Kind {
		case "seed", "incident", "url":
		default:
			v.errf(path+".kind", "got %q, expected seed, incident or url", r.Kind)
		}
		if r.ID == "" {
			v.errf(path+".id", "required")
		}
	}
}

func (v *validator) spec() {
	sp := v.s.Spec
	for i, c := range sp.Requires {
		if !providers.KnownCapability(c) {
			v.errf(fmt.Sprintf("spec.requires[%d]", i), "unknown capability %q; expected one of %s", c, own(providers.CapabilityList()))
		}
		v.requires[c] = true
		if c == providers.CapClusterAPI {
			v.requires[providers.CapNodes] = true
		}
	}
	if sp.PollInterval.Duration < 0 || (sp.PollInterval.Duration > 0 && sp.PollInterval.Duration < MinPollInterval) {
		v.errf("spec.pollInterval", "%s is shorter than the minimum %s", sp.PollInterval, MinPollInterval)
	}
	for i, t := range sp.Targets {
		v.target(fmt.Sprintf("spec.targets[%d]", i), t)
	}
	v.workloads()
	if len(sp.Steps) == 0 {
		v.errf("spec.steps", "required: at least one step")
	}
	if sp.Lab != nil {
		for _, e := range sp.Lab.Validate(field.NewPath("spec", "lab")) {
			v.err(e.Field, e.Detail)
		}
	}
	names := map[string]bool{}
	for i, st := range sp.Steps {
		path := fmt.Sprintf("spec.steps[%d]", i)
		switch {
		case st.Name == "":
			v.errf(path+".name", "required")
		case !dnsLabel.MatchString(st.Name):
			v.errf(path+".name", "%q must be lower-case letters, digits and '-'", st.Name)
		case names[st.Name]:
			v.errf(path+".name", "step %q is defined twice", st.Name)
		}
		names[st.Name] = true
		v.step(path, st)
		v.ended[st.Name] = true
	}
	v.labShape()
}

func (v *validator) target(path string, t Target) {
	for i, ex := range t.Exclude {
		switch {
		case ex == t.Name:
			v.errf(fmt.Sprintf("%s.exclude[%d]", path, i), "a target cannot exclude itself")
		case !v.targets[ex]:
			v.errf(fmt.Sprintf("%s.exclude[%d]", path, i), "unknown target %q; exclude names a target defined before this one: %s", ex, list(v.targets))
		case v.after[ex] != "" && v.after[ex] != t.After:
			v.errf(fmt.Sprintf("%s.exclude[%d]", path, i), "target %q is resolved after step %q; only a target resolved after the same step can exclude it", ex, v.after[ex])
		}
	}
	if t.After != "" {
		if !slices.ContainsFunc(v.s.Spec.Steps, func(st Step) bool { return st.Name == t.After }) {
			v.errf(path+".after", "no step %q; after names the step once which the target is resolved", t.After)
		}
		v.after[t.Name] = t.After
	}
	switch {
	case t.Name == "":
		v.errf(path+".name", "required")
	case v.targets[t.Name]:
		v.errf(path+".name", "target %q is defined twice", t.Name)
	}
	v.targets[t.Name] = true
	sel := t.Select
	if sel.Role == "" && sel.Cluster == "" && sel.MachineDeployment == "" && sel.ControlPlane == "" &&
		sel.NodeName == "" && len(sel.NodeLabels) == 0 && sel.VM == "" && sel.UUID == "" && sel.ProviderID == "" && sel.Host == "" {
		v.errf(path+".select", "required: at least one of role, cluster, machineDeployment, controlPlane, nodeName, nodeLabels, vm, uuid, providerID, host")
	}
	if sel.Role != "" && sel.Role != "control-plane" && sel.Role != "worker" {
		v.errf(path+".select.role", "got %q, expected control-plane or worker", sel.Role)
	}
	if sel.ProviderID != "" && !strings.HasPrefix(sel.ProviderID, "vsphere://") {
		v.errf(path+".select.providerID", "got %q, expected vsphere://<bios-uuid>", sel.ProviderID)
	}
	if t.Count < 0 {
		v.errf(path+".count", "%d is negative; expected 1 or more", t.Count)
	}
	if t.Percent < 0 || t.Percent > 100 {
		v.errf(path+".percent", "%d is out of range; expected 1 to 100", t.Percent)
	}
	if t.Count > 0 && t.Percent > 0 {
		v.errf(path+".percent", "set count or percent, not both")
	}
}

func (v *validator) step(path string, st Step) {
	kinds := 0
	for _, set := range []bool{st.Setup != nil, st.Inject != nil, st.Observe != nil, st.Assert != nil, st.Undo != nil, st.Teardown != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		v.errf(path, "a step has exactly one of setup, inject, observe, assert, undo, teardown; found %d", kinds)
		return
	}
	switch {
	case st.Setup != nil:
		v.baseline(path+".setup", *st.Setup)
	case st.Teardown != nil:
		v.baseline(path+".teardown", *st.Teardown)
	case st.Inject != nil:
		v.inject(path+".inject", *st.Inject)
		v.injects[st.Name] = true
	case st.Observe != nil:
		v.observe(path+".observe", *st.Observe)
	case st.Assert != nil:
		v.assert(path+".assert", *st.Assert)
	case st.Undo != nil:
		v.undo(path+".undo", *st.Undo)
		v.undos[st.Name] = true
	}
}

func (v *validator) baseline(path string, b Baseline) {
	if len(b.Require) == 0 {
		v.errf(path+".require", "required: at least one condition")
	}
	for i, c := range b.Require {
		v.condition(fmt.Sprintf("%s.require[%d]", path, i), c)
	}
}

func (v *validator) inject(path string, in Inject) {
	v.word(path, "fault", in.Fault, v.vocab.Faults)
	switch def := v.vocab.Faults[in.Fault]; {
	case def.Untargeted:
		if in.Target != "" {
			v.errf(path+".target", "%s acts on the management cluster as a whole and takes no target", in.Fault)
		}
	case in.Target == "" && def.Standalone && in.Params["cluster"] != "management":
		v.errf(path+".target", "required: the target whose workload cluster the objects are in; without a target, set params.cluster: management")
	case in.Target != "" || !def.Standalone:
		v.targetRef(path+".target", in.Target)
		if after := v.after[in.Target]; after != "" {
			v.errf(path+".target", "target %q is resolved after step %q, to observe what that step made; a fault acts on a target resolved before the first step", in.Target, after)
		}
	}
	if def, ok := v.vocab.Faults[in.Fault]; ok {
		v.wordArgs(path+".params", in.Params, def)
	}
}

func (v *validator) observe(path string, o Observe) {
	if len(o.Phases) == 0 {
		v.errf(path+".phases", "required: at least one phase")
	}
	for i, ph := range o.Phases {
		pp := fmt.Sprintf("%s.phases[%d]", path, i)
		switch {
		case ph.Name == "":
			v.errf(pp+".name", "required")
		case v.phases[ph.Name]:
			v.errf(pp+".name", "phase %q is defined twice", ph.Name)
		}
		v.condition(pp+".when", ph.When)
		v.anchor(pp+".from", ph.From)
		v.phases[ph.Name] = true
	}
	for i, g := range o.While {
		gp := fmt.Sprintf("%s.while[%d]", path, i)
		if !dnsLabel.MatchString(g.Name) {
			v.errf(gp+".name", "required: lower-case letters, digits and '-', got %q", g.Name)
		}
		v.condition(gp+".condition", g.Condition)
	}
}

func (v *validator) assert(path string, a Assert) {
	kinds := 0
	for _, set := range []bool{a.Within != nil, a.Never != nil, a.Consistently != nil, a.Count != nil, a.Disruption != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		v.errf(path, "an assert has exactly one of within, never, consistently, count, disruption; found %d", kinds)
		return
	}
	switch {
	case a.Within != nil:
		w := a.Within
		if w.Phase == "" {
			v.errf(path+".within.phase", "required")
		} else if !v.phases[w.Phase] {
			v.errf(path+".within.phase", "unknown phase %q; phases defined before this step: %s%s", w.Phase, list(v.phases), didYouMean(w.Phase, sortedKeys(v.phases)))
		}
		if w.Budget.IsZero() {
			v.errf(path+".within.budget", "required: a duration greater than zero, such as 5m")
		}
		v.anchor(path+".within.from", w.From)
	case a.Never != nil:
		v.window(path+".never", *a.Never)
	case a.Consistently != nil:
		v.window(path+".consistently", *a.Consistently)
	case a.Disruption != nil:
		v.disruption(path+".disruption", *a.Disruption)
	case a.Count != nil:
		c := a.Count
		v.window(path+".count", WindowAssertion{Condition: c.Condition, For: c.For})
		if c.AtLeast == nil && c.AtMost == nil {
			v.errf(path+".count", "required: atLeast, atMost or both")
		}
		if c.AtLeast != nil && *c.AtLeast < 0 {
			v.errf(path+".count.atLeast", "%d is negative", *c.AtLeast)
		}
		if c.AtMost != nil && *c.AtMost < 0 {
			v.errf(path+".count.atMost", "%d is negative", *c.AtMost)
		}
		if c.AtLeast != nil && c.AtMost != nil && *c.AtLeast > *c.AtMost {
			v.errf(path+".count", "atLeast %d is greater than atMost %d", *c.AtLeast, *c.AtMost)
		}
	}
}

func (v *validator) window(path string, w WindowAssertion) {
	v.condition(path+".condition", w.Condition)
	if w.For.IsZero() {
		v.errf(path+".for", "required: the window's length, such as 2m")
	}
}

func (v *validator) undo(path string, u UndoStep) {
	switch {
	case u.All && u.Fault != "":
		v.errf(path, "set fault or all, not both")
	case u.All:
	case u.Fault == "":
		v.errf(path+".fault", "required: the name of an earlier inject step, or all: true")
	case !v.injects[u.Fault]:
		v.errf(path+".fault", "no inject step %q before this step; inject steps so far: %s", u.Fault, list(v.injects))
	}
}

func (v *validator) condition(path string, c Condition) {
	v.word(path, "probe", c.Probe, v.vocab.Probes)
	v.targetRef(path+".target", c.Target)
	if def, ok := v.vocab.Probes[c.Probe]; ok {
		v.wordArgs(path+".args", c.Args, def)
		if slices.Contains(def.Args, "workload") {
			v.workloadArgs(path+".args", c.Args["workload"], c.Args["of"])
		}
	}
}

// word checks that name is one of words (a fault or a probe, as kind
// says) and that spec.requires has its capability.
func (v *validator) word(path, kind, name string, words map[string]Word) {
	def, ok := words[name]
	switch {
	case name == "":
		v.errf(path+"."+kind, "required: one of %s", strings.Join(sortedKeys(words), ", "))
	case !ok:
		v.errf(path+"."+kind, "unknown %s %q; expected one of %s%s", kind, name, own(strings.Join(sortedKeys(words), ", ")), own(didYouMean(name, sortedKeys(words))))
	case !v.requires[def.Capability]:
		v.errf(path+"."+kind, "%s %s needs capability %s; add it to spec.requires", kind, name, def.Capability)
	}
}

// wordArgs checks a fault's params or a probe's args against its word.
func (v *validator) wordArgs(path string, got map[string]string, def Word) {
	v.args(path, got, def.Args)
	if def.Check != nil {
		for _, e := range def.Check(got) {
			v.errf(path+"."+e.Arg, "%s", e.Msg)
		}
	}
}
