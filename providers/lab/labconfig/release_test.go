package labconfig

import (
	"strings"
	"testing"
)

func TestReleaseResolve(t *testing.T) {
	def, other := Stacks[0], Stacks[1]
	for _, tc := range []struct {
		in      string
		want    Stack
		wantErr string
	}{
		{"", def, ""},
		{def.Name, def, ""},
		{other.Name, other, ""},
		{other.ClusterAPI + "+" + other.CAPV, other, ""},
		{"v1.9", Stack{}, `no stack is named "v1.9"`},
		{def.ClusterAPI + "+" + other.CAPV, Stack{}, "is not a stack the lab runs"},
		{other.ClusterAPI + "+", Stack{}, "both versions are needed"},
		// A Cluster API version alone picks the stack that has it (the
		// first: the compiled one for v1.13.6), or that patch with the
		// CAPV of its minor's stack; an exact pair of another patch.
		{"v1.12.10", other, ""},
		{def.ClusterAPI, def, ""},
		{"v1.13.4", Stack{Name: "v1.13.4+v1.16.1", ClusterAPI: "v1.13.4", CAPV: "v1.16.1"}, ""},
		{"v1.13.4+v1.16.1", Stack{Name: "v1.13.4+v1.16.1", ClusterAPI: "v1.13.4", CAPV: "v1.16.1"}, ""},
		{"v1.14.1+v1.16.1", Stack{Name: "v1.14.1+v1.16.1", ClusterAPI: "v1.14.1", CAPV: "v1.16.1", Untested: Stacks[4].Untested}, ""},
		{"v1.10.4", Stack{}, `no stack is named "v1.10.4"`},
		{"v1.13.4+v1.15.2", Stack{}, "is not a stack the lab runs"},
	} {
		got, err := ParseRelease(tc.in).Resolve()
		if tc.in == "" {
			got, err = Release{}.Resolve()
		}
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), other.String()) {
				t.Errorf("%q: error %v, want one saying %q and listing the stacks", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if (Release{Stack: other.Name, CAPV: other.CAPV}).Validate(nil) == nil {
		t.Error("a stack's name with versions was accepted")
	}
}

func TestReleaseSameStack(t *testing.T) {
	other := Stacks[1]
	byName, byVersions := Release{Stack: other.Name}, Release{ClusterAPI: other.ClusterAPI, CAPV: other.CAPV}
	if !byName.SameStack(byVersions) || !(Release{}).SameStack(Release{Stack: Stacks[0].Name}) {
		t.Error("two names of one stack are not the same stack")
	}
	if byName.SameStack(Release{}) {
		t.Error("another stack is the default one")
	}
	if !strings.Contains(DefaultStack().Key(), DefaultStack().ClusterAPI) || !DefaultStack().Compiled {
		t.Errorf("default stack %+v", DefaultStack())
	}
}

// TestClusterServesOnlyItsStack: a warm lab's cluster does not serve a
// scenario of another release.
func TestClusterServesOnlyItsStack(t *testing.T) {
	s := LabSpec{ControlPlanes: 1, Workers: 1}
	c := SpecFor("lab", s)
	if !c.Serves(s) {
		t.Fatal("a cluster does not serve its own shape")
	}
	s.Release = Release{Stack: Stacks[1].Name}
	if c.Serves(s) {
		t.Error("a cluster of the default stack serves a scenario of another")
	}
}

// TestHasEncryptionAlgorithm: Cluster API v1.11's KubeadmConfigSpec has no
// encryptionAlgorithm; v1.12 and later have it.
func TestHasEncryptionAlgorithm(t *testing.T) {
	for capi, want := range map[string]bool{"v1.11.10": false, "v1.12.10": true, "v1.13.6": true, "v1.14.2": true, "v2.0.0": true} {
		if got := (Stack{ClusterAPI: capi}).HasEncryptionAlgorithm(); got != want {
			t.Errorf("Cluster API %s: %t, want %t", capi, got, want)
		}
	}
}
