package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/artifacts/scorecard"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/scenarios"
)

// TestIntegrationCompareReleases is the scorecard of two small runs:
// power-off-worker once on a lab of v1.12 (its own manager processes) and
// once on v1.13 (in faultline's process). Each side names its release, has
// every phase of the scenario, and the three files are written.
func TestIntegrationCompareReleases(t *testing.T) {
	labtest.Require(t)
	dir := t.TempDir()
	sc := runCompare(t, dir, "--base-release", "v1.12", "--target-release", "v1.13", "--runs", "1", "power-off-worker")
	if sc.Base.Release == nil || sc.Base.Release.ClusterAPI != lab.Stacks()[1].ClusterAPI || sc.Target.Release == nil || sc.Target.Release.ClusterAPI != lab.Stacks()[0].ClusterAPI {
		t.Fatalf("sides %+v / %+v, want Cluster API %s against %s", sc.Base, sc.Target, lab.Stacks()[1].ClusterAPI, lab.Stacks()[0].ClusterAPI)
	}
	if len(sc.Scenarios) != 1 || sc.Scenarios[0].BaseVerdicts["pass"] != 1 || sc.Scenarios[0].TargetVerdicts["pass"] != 1 {
		t.Fatalf("scenarios %+v, want power-off-worker passing once on each side", sc.Scenarios)
	}
	for _, p := range sc.Scenarios[0].Phases {
		if len(p.Base.Samples) != 1 || len(p.Target.Samples) != 1 {
			t.Errorf("phase %s: %d base and %d target times, want one each", p.Name, len(p.Base.Samples), len(p.Target.Samples))
		}
	}
	for _, f := range []string{"scorecard.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestIntegrationCompareFlagsSlowerPhase makes one phase slower on one
// side for real: power-off-worker runs scorecard.MinRuns times as the
// catalogue has it (its health check marks the Machine 3s after the Node
// went NotReady) and as many times with the health check's timeout at
// 15s, two at a time on one warm lab a side. compare of the two folders
// exits 1 and names machine-unhealthy, and only it, as the regression:
// with that many runs the rank test tells the 12s from noise.
func TestIntegrationCompareFlagsSlowerPhase(t *testing.T) {
	labtest.Require(t)
	src, err := scenarios.Read("power-off-worker")
	if err != nil {
		t.Fatal(err)
	}
	slow := strings.Replace(string(src), "    workers: 2\n", "    workers: 2\n    unhealthyTimeout: 15s\n", 1)
	file := filepath.Join(t.TempDir(), "power-off-worker.yaml")
	if err := os.WriteFile(file, []byte(slow), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for side, scenario := range map[string]string{"base": "power-off-worker", "target": file} {
		args := []string{"run", "--parallel", "2", "--artifacts", filepath.Join(dir, side)}
		for range scorecard.MinRuns {
			args = append(args, scenario)
		}
		var out, errOut bytes.Buffer
		if code := execute(args, &out, &errOut); code != exitPass {
			t.Fatalf("%s: exit %d\n%s\n%s", side, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	code := execute([]string{"compare", filepath.Join(dir, "base"), filepath.Join(dir, "target")}, &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	if code != exitFail {
		t.Errorf("exit %d, want %d (a regression)", code, exitFail)
	}
	_, regressions, ok := strings.Cut(out.String(), "regression(s):")
	if !ok || !strings.Contains(regressions, "power-off-worker/machine-unhealthy: slower") || strings.Contains(regressions, "node-not-ready") {
		t.Errorf("the regressions do not name machine-unhealthy, or name node-not-ready:\n%s", regressions)
	}
}

// runCompare runs faultline compare with args into dir and reads the
// scorecard it wrote; a compare that neither passes nor flags a
// regression fails the test.
func runCompare(t *testing.T, dir string, args ...string) scorecard.Scorecard {
	t.Helper()
	args = append([]string{"compare", "--artifacts", dir}, args...)
	var out, errOut bytes.Buffer
	code := execute(args, &out, &errOut)
	t.Logf("faultline %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.String(), errOut.String())
	if code != exitPass && code != exitFail {
		t.Fatalf("exit %d, want 0 or 1 (a regression)", code)
	}
	b, err := os.ReadFile(filepath.Join(dir, "scorecard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc scorecard.Scorecard
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	return sc
}
