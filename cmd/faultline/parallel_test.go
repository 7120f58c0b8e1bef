package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestIntegrationRunParallel runs two destructive scenarios at once on one
// warm lab (--parallel 3): the lab starts once, each scenario gets a
// cluster of its own, their runs overlap in time, and each one's faults
// (its journal) touch only its own cluster; each keeps what the
// controllers' work queues did meanwhile. A third, which no leased
// cluster serves (vm-power-cycle: no spec.lab), runs beside them on a lab
// of its own rather than after them.
func TestIntegrationRunParallel(t *testing.T) {
	labtest.Require(t)
	dir := t.TempDir()
	a, b := smallScenario(t, dir, "power-off-worker.yaml", "side-a"), smallScenario(t, dir, "stop-kubelet-worker.yaml", "side-b")
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := execute([]string{"run", a, "vm-power-cycle", b, "--parallel", "3", "--artifacts", out}, &stdout, &stderr)
	t.Logf("stderr:\n%s", stderr.String())
	if code != 0 || !strings.Contains(stdout.String(), "3 of 3 scenarios passed") {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	if want := "vm-power-cycle runs beside the others on a lab of its own: it has no spec.lab"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q", want)
	}
	if n := strings.Count(stderr.String(), "lab: starting cluster"); n != 1 {
		t.Errorf("the lab started %d times, want once", n)
	}
	namespace := regexp.MustCompile(`"namespace":"([^"]+)"`)
	var results []engine.Result
	own := map[string]string{}
	for _, sc := range []string{"side-a", "side-b"} {
		j, err := os.ReadFile(filepath.Join(out, sc, "journal.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range namespace.FindAllStringSubmatch(string(j), -1) {
			seen[m[1]] = true
		}
		if len(seen) != 1 {
			t.Errorf("%s's journal names namespaces %v; want its own cluster's only:\n%s", sc, seen, j)
		}
		for ns := range seen {
			own[sc] = ns
		}
		var res engine.Result
		if b, err := os.ReadFile(filepath.Join(out, sc, "result.json")); err != nil || json.Unmarshal(b, &res) != nil {
			t.Fatalf("result of %s: %v", sc, err)
		}
		results = append(results, res)
		// Both remediations went through MachineHealthCheck's work
		// queue, read for each run's window.
		if adds := queueAdds(t, filepath.Join(out, sc)); adds["machinehealthcheck"] == 0 || adds["machine"] == 0 {
			t.Errorf("%s: queues.json %v, want machinehealthcheck and machine", sc, adds)
		}
	}
	if own["side-a"] == own["side-b"] {
		t.Errorf("both scenarios' faults went to namespace %s", own["side-a"])
	}
	if x, y := results[0], results[1]; !x.StartedAt.Before(y.FinishedAt) || !y.StartedAt.Before(x.FinishedAt) {
		t.Errorf("the runs did not overlap: %s-%s and %s-%s", x.StartedAt, x.FinishedAt, y.StartedAt, y.FinishedAt)
	}
	// Run after them, it would have started once both had ended.
	var vm engine.Result
	if b, err := os.ReadFile(filepath.Join(out, "vm-power-cycle", "result.json")); err != nil || json.Unmarshal(b, &vm) != nil {
		t.Fatalf("result of vm-power-cycle: %v", err)
	}
	if !vm.StartedAt.Before(results[0].FinishedAt) && !vm.StartedAt.Before(results[1].FinishedAt) {
		t.Errorf("vm-power-cycle started at %s, after both leased runs ended", vm.StartedAt)
	}
}

// smallScenario writes, in dir, the catalogue's file renamed name with one
// control plane (a lab of it starts faster), and returns its path.
func smallScenario(t *testing.T, dir, file, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "scenarios", file))
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^  name: .*$`).ReplaceAllString(string(b), "  name: "+name)
	s = strings.Replace(s, "controlPlanes: 3", "controlPlanes: 1", 1)
	path := filepath.Join(dir, name+".yaml")
	write(t, path, s)
	return path
}
