package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/artifacts/scorecard"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/scenarios"
)

// DifferentialEnv chooses the scenarios of TestIntegrationDifferential:
// "all" is every lab scenario of the catalogue (the nightly suite), a
// comma-separated list names them; unset, differentialCI.
const DifferentialEnv = "FAULTLINE_DIFFERENTIAL"

// differentialCI is the part make test runs: a remediation, and the
// preflight checks' deferral that the hand-wired stack once lacked.
var differentialCI = []string{"power-off-worker", "lose-worker-after-control-plane-upgrade"}

// explained are the phase differences between the two ways of running a
// release that are known and measured; any other flag of the scorecard
// fails the test, and so does every verdict that differs.
//
// Each is a phase faster in-process, and only that: one that waits for a
// new VM's IP. CAPV's VSphereVM controller requeues a VM without an
// address after 10s
// (controllers/vspherevm_controller.go, "we didn't get any addresses,
// requeue"); the node simulator gives the address within its 500ms tick
// of the power-on. As its own binary, CAPV waits out the 10s every time;
// in faultline's process another event reconciles the VSphereVM sooner.
// Which event is not established yet (issue 48's closing note): until it
// is, a phase slower in-process, or one not listed here, still fails.
var explained = []struct {
	// scenario is "" for every scenario.
	scenario, phase string
}{
	{"", "replacement-running"},
	{"", "replacement-provisioned"},
	{"", "first-control-plane-replaced"},
	{"", "control-plane-rolled-out"},
	{"", "workers-rolled-out"},
	// A MachineDeployment's rollout deletes an old Machine once a new
	// one is available.
	{"kubernetes-rollout-lose-worker", "machine-deleted"},
	// The replacement's CNI pod, refused or not ready, and the workers
	// Ready again, wait for the replacement's VM (2026-11-26's table in
	// docs/fidelity.md).
	{"break-webhook-service", "cni-refused"},
	{"break-webhook-service", "replacement-cni-not-ready"},
	{"break-webhook-service", "workers-ready"},
	{"webhook-denies-system-namespaces", "cni-denied"},
	{"webhook-denies-system-namespaces", "replacement-cni-not-ready"},
	{"webhook-denies-system-namespaces", "workers-ready"},
	// The health check's check fires once the replacement is provisioned.
	{"etcd-leader-stuck", "check-fires"},
	// KCP remediates the second lost control plane once the first one's
	// replacement is provisioned, then the etcd members and KCP's
	// replicas are whole again.
	{"kcp-remediate-two-control-planes", "both-remediated"},
	{"kcp-remediate-two-control-planes", "both-replaced"},
	{"kcp-remediate-two-control-planes", "control-plane-restored"},
	{"kcp-remediate-two-control-planes", "etcd-restored"},
}

const newVMIP = "a new VM's IP: CAPV's 10s requeue, waited out by its binary"

// TestIntegrationDifferential runs the same scenarios on the compiled
// stack (v1.13, in faultline's process) and on the same release's own
// manager binaries (v1.13-processes), once each, and compares them with
// faultline compare: a verdict that differs, or a phase beyond the
// tolerance (median +20% and +5s) that no listed difference explains,
// fails, naming the scenario and the phase.
func TestIntegrationDifferential(t *testing.T) {
	labtest.Require(t)
	names := differentialScenarios(t)
	dir := t.TempDir()
	if a := os.Getenv("ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "differential")
	}
	sc := runCompare(t, dir, append([]string{"--base-release", "v1.13-processes", "--target-release", labconfig.DefaultStack().Name, "--runs", "1"}, names...)...)
	if len(sc.Scenarios) != len(names) {
		t.Errorf("the scorecard has %d scenarios, want %d (%v)", len(sc.Scenarios), len(names), names)
	}
	for _, row := range sc.Scenarios {
		// One run a side is too few for the scorecard's rank test, which
		// leaves a move beyond the tolerance undecided: here it counts
		// as a flag, since the two sides run one release.
		flags := row.Flags
		for _, ph := range row.Phases {
			if ph.Undecided != "" {
				flags = append(flags, scorecard.Flag{Phase: ph.Name, What: ph.Undecided})
			}
		}
		for _, f := range flags {
			if why := explanation(row.Name, f); why != "" {
				t.Logf("%s/%s: %s: explained: %s", row.Name, f.Phase, f.What, why)
				continue
			}
			where := row.Name
			if f.Phase != "" {
				where += "/" + f.Phase
			}
			t.Errorf("%s: %s (in faultline's process against the release's own binaries)", where, f.What)
		}
	}
}

// explanation is why f, a flag of scenario's, is no difference of
// behaviour, "" when nothing listed says so.
func explanation(scenario string, f scorecard.Flag) string {
	for _, e := range explained {
		if (e.scenario == "" || e.scenario == scenario) && f.Phase == e.phase && strings.HasPrefix(f.What, "faster") {
			return newVMIP
		}
	}
	return ""
}

// differentialScenarios are the scenarios DifferentialEnv names.
func differentialScenarios(t *testing.T) []string {
	t.Helper()
	switch v := os.Getenv(DifferentialEnv); v {
	case "":
		return differentialCI
	case "all":
		var names []string
		for _, name := range scenarios.Names() {
			if onBothStacks(t, name) {
				names = append(names, name)
			}
		}
		return names
	default:
		return strings.Split(v, ",")
	}
}

// onBothStacks tells whether the catalogue's scenario name runs on a lab
// of any stack: it has spec.lab, names no release of its own and upgrades
// no management plane (both pick their stacks themselves), and needs no
// workloads (the simulated tier skips those).
func onBothStacks(t *testing.T, name string) bool {
	t.Helper()
	src, err := scenarios.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Parse(name+".yaml", src, nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Lab == nil || !s.Spec.Lab.Release.IsZero() || len(s.Spec.Workloads) > 0 {
		return false
	}
	return !slices.ContainsFunc(s.Spec.Steps, func(st scenario.Step) bool {
		return st.Inject != nil && st.Inject.Fault == "upgrade.management"
	})
}
