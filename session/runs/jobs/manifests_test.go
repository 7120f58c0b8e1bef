package jobs

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/scenarios/selection"
	"github.com/faultline-dev/faultline/session"
)

// TestJobManifest: one index per scenario, none tried twice, one failing
// stopping no other; the pod meets the restricted Pod Security Standard,
// reaches no API (no token), reads its scenario by its index and sends
// its run folder back.
func TestJobManifest(t *testing.T) {
	j := job("faultline-abc", "faultline-runs", "faultline.dev/faultline:v0.1.0-x", 3, 2, []string{"--set=a=b"})
	s := j.Spec
	if *s.Completions != 3 || *s.Parallelism != 2 || *s.BackoffLimitPerIndex != 0 || string(*s.CompletionMode) != "Indexed" {
		t.Errorf("job spec: completions %d parallelism %d backoffLimitPerIndex %d mode %s", *s.Completions, *s.Parallelism, *s.BackoffLimitPerIndex, *s.CompletionMode)
	}
	if s.MaxFailedIndexes != nil {
		t.Error("maxFailedIndexes set: a failing scenario would stop the others")
	}
	p := s.Template.Spec
	c := p.Containers[0]
	if p.RestartPolicy != corev1.RestartPolicyNever || *p.AutomountServiceAccountToken || p.ServiceAccountName != ServiceAccount {
		t.Errorf("pod: restart %s, token %t, account %s", p.RestartPolicy, *p.AutomountServiceAccountToken, p.ServiceAccountName)
	}
	if !*p.SecurityContext.RunAsNonRoot || p.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		*c.SecurityContext.AllowPrivilegeEscalation || !*c.SecurityContext.ReadOnlyRootFilesystem || !slices.Equal(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("not restricted: %+v %+v", p.SecurityContext, c.SecurityContext)
	}
	want := []string{"run", "/scenarios/$(JOB_COMPLETION_INDEX).yaml", "--artifacts", "/tmp/run", "--emit-run-folder", "--set=a=b"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	cm := configMap("faultline-abc", "faultline-runs", []string{"a: 1", "b: 2"})
	if cm.Data["0.yaml"] != "a: 1" || cm.Data["1.yaml"] != "b: 2" {
		t.Errorf("configmap %v", cm.Data)
	}
}

// TestPodPlacement: a pod's lab runs simulated nodes on the compiled
// stack; a scenario of real nodes, of another release or upgrading the
// management plane is skipped saying why, as is one the lab skips.
func TestPodPlacement(t *testing.T) {
	e := &Executor{name: "faultline-x", cfg: Config{Context: "ci"}}
	load := func(name string, adjust session.Adjustments) *scenario.Scenario {
		sc, err := selection.Catalogue(name).Load(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := session.Adjust(sc, adjust); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	for _, tc := range []struct {
		sc    *scenario.Scenario
		where session.Where
		why   string
	}{
		{load("power-off-worker", session.Adjustments{}), session.Pod, "a pod of Job faultline-x on ci"},
		{load("vm-power-cycle", session.Adjustments{}), session.Pod, ""},
		{load("power-off-worker", session.Adjustments{Nodes: scenario.NodesContainers}), session.Skipped, "a pod runs no containers"},
		{load("power-off-worker", session.Adjustments{Release: lab.ParseRelease("v1.12")}), session.Skipped, "which a pod cannot build"},
		{load("upgrade-management-during-remediation", session.Adjustments{}), session.Skipped, "upgrades the management plane"},
		{load("pdb-blocks-drain", session.Adjustments{}), session.Skipped, "lacks capability Workloads"},
	} {
		got := e.Place(tc.sc)
		if got.Where != tc.where || !strings.Contains(got.Why, tc.why) {
			t.Errorf("%s: %+v, want %s (%s)", tc.sc.Metadata.Name, got, tc.where, tc.why)
		}
	}
}
