package labconfig

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
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
	// Untested, when set, says why the pair is one CAPV does not test
	// (no CAPV built for this Cluster API is served); everything that
	// shows the stack shows it.
	Untested string
}

// Stacks are the stacks a lab can run, the default first: every coherent
// pair the module proxy serves (each CAPV pins the Cluster API it is
// built against with a replace directive: v1.14.0 pins v1.11, v1.15.2
// v1.12, v1.16.1 v1.13), the newest patch of each minor whose source the
// proxy serves, and v1.14 with the newest CAPV, a pair CAPV does not test
// (no CAPV v1.17 is served). Of v1.14.3 the proxy answers the version but
// refuses the source (403 on its .zip, 2026-12-02): v1.14.2 it is, which
// has the fixes of cluster-api #14167 and #14197.
// The compiled release also runs as its own binaries (v1.13-processes):
// what the in-process lab measures can be checked against the real
// managers, and the two ways compared (make bench). Other patches of a
// minor run as exact pairs (ParseRelease, Release.Resolve).
var Stacks = []Stack{
	{Name: "v1.13", ClusterAPI: "v1.13.6", CAPV: "v1.16.1", Compiled: true},
	{Name: "v1.12", ClusterAPI: "v1.12.10", CAPV: "v1.15.2"},
	{Name: "v1.13-processes", ClusterAPI: "v1.13.6", CAPV: "v1.16.1"},
	{Name: "v1.11", ClusterAPI: "v1.11.10", CAPV: "v1.14.0"},
	{Name: "v1.14", ClusterAPI: "v1.14.2", CAPV: "v1.16.1", Untested: "a pair CAPV does not test: CAPV v1.16.1 is built against Cluster API v1.13, and no CAPV for v1.14 (v1.17) is served"},
}

// DefaultStack is the stack a lab runs when none is named.
func DefaultStack() Stack { return Stacks[0] }

// String names the stack and both releases.
func (s Stack) String() string {
	if s.Untested != "" {
		return fmt.Sprintf("%s (Cluster API %s, CAPV %s; untested pair)", s.Name, s.ClusterAPI, s.CAPV)
	}
	return fmt.Sprintf("%s (Cluster API %s, CAPV %s)", s.Name, s.ClusterAPI, s.CAPV)
}

// HasEncryptionAlgorithm tells whether the stack's KubeadmConfigSpec has
// clusterConfiguration.encryptionAlgorithm (Cluster API v1.12 and later).
func (s Stack) HasEncryptionAlgorithm() bool {
	v, err := version.ParseSemantic(s.ClusterAPI)
	return err != nil || v.AtLeast(version.MajorMinor(1, 12))
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

// ParseRelease reads a --release value: a stack's name, a Cluster API
// version alone ("v1.12.10": the stack that has it, or that patch with
// the CAPV of its minor's stack), or CLUSTER_API_VERSION+CAPV_VERSION
// ("v1.13.4+v1.16.1").
func ParseRelease(s string) Release {
	if capi, capv, ok := strings.Cut(s, "+"); ok {
		return Release{ClusterAPI: capi, CAPV: capv}
	}
	return Release{Stack: s}
}

// Resolve is the stack r names; the error lists the supported ones. A
// pair of versions that is no stack's, or a Cluster API version alone,
// is an exact pair when a stack has that minor of Cluster API and that
// CAPV: another patch, for bisecting one (built on first use; the proxy
// says whether it serves it).
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
	capi, capv, alone := r.ClusterAPI, r.CAPV, false
	if r.Stack != "" && capi == "" && capv == "" && patchVersion(r.Stack) {
		for _, s := range Stacks {
			if s.ClusterAPI == r.Stack {
				return s, nil
			}
		}
		capi, alone = r.Stack, true
	}
	if patchVersion(capi) && (alone || patchVersion(capv)) {
		for _, s := range Stacks {
			if minorOf(s.ClusterAPI) == minorOf(capi) && (capv == "" || capv == s.CAPV) {
				return Stack{Name: capi + "+" + s.CAPV, ClusterAPI: capi, CAPV: s.CAPV, Untested: s.Untested}, nil
			}
		}
	}
	return Stack{}, fmt.Errorf("%s: expected one of %s, or another patch of one's Cluster API with its CAPV (CAPI_VERSION+CAPV_VERSION)", r.describe(), supported())
}

// patchVersion tells whether v is a release's version, vMAJOR.MINOR.PATCH.
func patchVersion(v string) bool {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if !strings.HasPrefix(v, "v") || len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// minorOf is vMAJOR.MINOR of a version.
func minorOf(v string) string {
	if i := strings.LastIndex(v, "."); i > 0 {
		return v[:i]
	}
	return v
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
