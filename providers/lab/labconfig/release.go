package labconfig

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Stack is a Cluster API release and the CAPV release built against it: a
// coherent pair (CAPV pins its Cluster API with a replace directive), which
// the lab's management plane runs.
type Stack struct {
	// Name is what a scenario or --release calls the stack.
	Name       string
	ClusterAPI string
	CAPV       string
	// Compiled says faultline links this release (go.mod) and runs its
	// controllers in its own process; every other stack runs as that
	// release's own manager binaries, built from its module sources.
	Compiled bool
}

// Stacks are the stacks a lab can run, the default first. What the module
// proxy serves and which pairs are coherent is measured in the notes on
// releases (CAPV v1.16.1 pins Cluster API v1.13.1, v1.15.2 pins v1.12).
// The compiled release also runs as its own binaries (v1.13-processes):
// what the in-process lab measures can be checked against the real
// managers, and the two ways compared (make bench).
var Stacks = []Stack{
	{Name: "v1.13", ClusterAPI: "v1.13.6", CAPV: "v1.16.1", Compiled: true},
	{Name: "v1.12", ClusterAPI: "v1.12.5", CAPV: "v1.15.2"},
	{Name: "v1.13-processes", ClusterAPI: "v1.13.6", CAPV: "v1.16.1"},
}

// DefaultStack is the stack a lab runs when none is named.
func DefaultStack() Stack { return Stacks[0] }

// String names the stack and both releases.
func (s Stack) String() string {
	return fmt.Sprintf("%s (Cluster API %s, CAPV %s)", s.Name, s.ClusterAPI, s.CAPV)
}

// Key is the stack's folder name in the cache of built releases.
func (s Stack) Key() string { return "capi-" + s.ClusterAPI + "+capv-" + s.CAPV }

// Release names the stack a lab runs: by name (stack, or the scalar form
// `release: v1.12`), or by both versions (clusterAPI and capv). The zero
// Release is the default stack.
type Release struct {
	Stack      string `yaml:"stack" json:"stack,omitempty"`
	ClusterAPI string `yaml:"clusterAPI" json:"clusterAPI,omitempty"`
	CAPV       string `yaml:"capv" json:"capv,omitempty"`
}

// SameStack tells whether r and o name the same stack (both unknown: the
// same words).
func (r Release) SameStack(o Release) bool {
	a, errA := r.Resolve()
	b, errB := o.Resolve()
	if errA != nil || errB != nil {
		return r == o
	}
	return a == b
}

// IsZero tells whether r names no stack.
func (r Release) IsZero() bool { return r == Release{} }

// ParseRelease reads a --release value: a stack's name, or
// CLUSTER_API_VERSION+CAPV_VERSION ("v1.12.5+v1.15.2").
func ParseRelease(s string) Release {
	if capi, capv, ok := strings.Cut(s, "+"); ok {
		return Release{ClusterAPI: capi, CAPV: capv}
	}
	return Release{Stack: s}
}

// Resolve is the stack r names; the error lists the supported ones.
func (r Release) Resolve() (Stack, error) {
	if r.IsZero() {
		return DefaultStack(), nil
	}
	for _, s := range Stacks {
		byName := r.Stack == s.Name && r.ClusterAPI == "" && r.CAPV == ""
		byVersions := r.Stack == "" && r.ClusterAPI == s.ClusterAPI && r.CAPV == s.CAPV
		if byName || byVersions {
			return s, nil
		}
	}
	return Stack{}, fmt.Errorf("%s: expected one of %s", r.describe(), supported())
}

func (r Release) describe() string {
	// What the file said is cut (Shown); the list of stacks is not.
	say := func(format string, args ...any) string { return fmt.Sprintf(format, Shown(args)...) }
	switch {
	case r.Stack != "" && (r.ClusterAPI != "" || r.CAPV != ""):
		return say("stack %q with versions: name a stack or give clusterAPI and capv, not both", r.Stack)
	case r.Stack != "":
		return say("no stack is named %q", r.Stack)
	case r.ClusterAPI == "" || r.CAPV == "":
		return say("Cluster API %q with CAPV %q: both versions are needed", r.ClusterAPI, r.CAPV)
	}
	return say("Cluster API %s with CAPV %s is not a stack the lab runs (CAPV pins the Cluster API it is built against)", r.ClusterAPI, r.CAPV)
}

// supported lists the stacks for an error.
func supported() string {
	parts := make([]string, len(Stacks))
	for i, s := range Stacks {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// Validate reports a release that names no supported stack at fld.
func (r Release) Validate(fld *field.Path) field.ErrorList {
	if _, err := r.Resolve(); err != nil {
		return field.ErrorList{field.Invalid(fld, r.String(), err.Error())}
	}
	return nil
}

// String is the release as a --release value.
func (r Release) String() string {
	if r.Stack != "" || r.IsZero() {
		return r.Stack
	}
	return r.ClusterAPI + "+" + r.CAPV
}
