package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

func names(t *testing.T, args []string, selector string) []string {
	t.Helper()
	scs, err := selectScenarios(args, selector, nil)
	if err != nil {
		t.Fatalf("select %v -l %q: %v", args, selector, err)
	}
	var out []string
	for _, sc := range scs {
		out = append(out, sc.Metadata.Name)
	}
	return out
}

// Scenarios are selected from files, folders and catalogue names, and
// among them by label selector, as kubectl selects objects.
func TestSelectScenarios(t *testing.T) {
	t.Parallel()
	if got := names(t, nil, "seed-003"); !slices.Equal(got, []string{"etcd-leader-stuck", "host-lost-with-ha", "host-lost-with-two-control-planes", "host-lost-without-ha"}) {
		t.Errorf("catalogue -l seed-003: %v", got)
	}
	if got := names(t, nil, "seed-000,provider!=kind"); !slices.Equal(got, []string{"break-webhook-service", "webhook-denies-system-namespaces"}) {
		t.Errorf("catalogue -l seed-000,provider!=kind: %v", got)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), powerCycleFile("team-a", "a"))
	write(t, filepath.Join(dir, "sub", "b.yml"), powerCycleFile("team-b", "b"))
	write(t, filepath.Join(dir, "notes.txt"), "not a scenario")
	if got := names(t, []string{dir}, ""); !slices.Equal(got, []string{"team-a", "team-b"}) {
		t.Errorf("folder: %v", got)
	}
	if got := names(t, []string{dir, "vm-power-cycle"}, "team in (b),!provider"); !slices.Equal(got, []string{"team-b"}) {
		t.Errorf("folder and catalogue name -l 'team in (b)': %v", got)
	}
	// A --set goes to the scenarios that declare it.
	scs, err := selectScenarios([]string{dir, "power-off-worker"}, "", map[string]string{"vm": "DC0_H0_VM1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 3 || scs[0].Spec.Targets[0].Select.VM != "DC0_H0_VM1" || scs[2].Metadata.Name != "power-off-worker" {
		t.Errorf("--set vm: %+v", scs)
	}
}

func powerCycleFile(name, team string) string {
	b, err := os.ReadFile(catalogueScenario)
	if err != nil {
		panic(err)
	}
	s := strings.Replace(string(b), "name: vm-power-cycle", "name: "+name, 1)
	return strings.Replace(s, "  labels:\n", "  labels:\n    team: "+team+"\n", 1)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationRunSeveral runs a folder of two VM scenarios on vcsim,
// one after the other, with one summary and one JUnit for both; -l runs
// one of them.
func TestIntegrationRunSeveral(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs scenarios on an in-process vcsim")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), powerCycleFile("team-a", "a"))
	write(t, filepath.Join(dir, "b.yaml"), strings.Replace(powerCycleFile("team-b", "b"), "vm: DC0_H0_VM0", "vm: DC0_H0_VM1", 1))
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	summary := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv(artifacts.EnvStepSummary, "")
	if code := execute([]string{"run", dir, "--artifacts", out, "--summary", summary}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "2 of 2 scenarios passed:\n  PASS     team-a (") || !strings.Contains(stdout.String(), "\n  PASS     team-b (") {
		t.Errorf("summary:\n%s", stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(out, artifacts.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc artifacts.JUnitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 2 || doc.Suites[0].Name != "team-a" || doc.Suites[1].Name != "team-b" {
		t.Errorf("junit: %+v", doc)
	}
	for _, s := range doc.Suites {
		if s.Tests < 2 || s.Failures+s.Errors != 0 {
			t.Errorf("junit suite %s: %d cases, %d failures, %d errors", s.Name, s.Tests, s.Failures, s.Errors)
		}
	}
	if md, err := os.ReadFile(summary); err != nil || !strings.Contains(string(md), "## faultline: 2 of 2 scenarios passed") {
		t.Errorf("--summary: %v\n%s", err, md)
	}
	for _, sc := range []string{"team-a", "team-b"} {
		if _, err := os.Stat(filepath.Join(out, sc, "result.json")); err != nil {
			t.Errorf("run folder of %s: %v", sc, err)
		}
	}
	// One page for the run, linking each scenario's report; each verdict
	// as its scenario ended.
	if index, err := os.ReadFile(filepath.Join(out, artifacts.IndexFile)); err != nil || !strings.Contains(string(index), `<a href="team-a/report.html">team-a</a>`) || !strings.Contains(string(index), "2 of 2 scenarios passed") {
		t.Errorf("index.html: %v\n%s", err, index)
	}
	if !regexp.MustCompile(`(?s)=== team-a\n.*---  PASS     team-a \(.*=== team-b`).MatchString(stderr.String()) {
		t.Errorf("team-a's verdict not printed before team-b started:\n%s", stderr.String())
	}
	// The same scenario twice: each run keeps its own folder.
	twice := t.TempDir()
	stdout.Reset()
	a := filepath.Join(dir, "a.yaml")
	if code := execute([]string{"run", a, a, "--artifacts", twice}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "2 of 2 scenarios passed") {
		t.Fatalf("%s twice: exit %d\n%s", a, code, stdout.String())
	}
	for _, folder := range []string{"team-a", "team-a-2"} {
		if _, err := os.Stat(filepath.Join(twice, folder, "result.json")); err != nil {
			t.Errorf("%s twice: run folder %s: %v", a, folder, err)
		}
	}
	stdout.Reset()
	if code := execute([]string{"run", dir, "-l", "team=b", "--artifacts", t.TempDir()}, &stdout, &stderr); code != 0 || strings.Contains(stdout.String(), "team-a") || !strings.Contains(stdout.String(), "1 of 1 scenarios passed:\n  PASS     team-b") {
		t.Errorf("-l team=b: exit %d\n%s", code, stdout.String())
	}
}

// TestIntegrationRunWarmLab runs two lab scenarios through one run: the
// lab starts once, and the second scenario gets a fresh cluster on it,
// prepared while the first ran, in a namespace of its own, where its
// fault goes.
func TestIntegrationRunWarmLab(t *testing.T) {
	labtest.Require(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := execute([]string{"run", "power-off-worker", "stop-kubelet-worker", "--artifacts", out}, &stdout, &stderr)
	t.Logf("stderr:\n%s", stderr.String())
	if code != 0 || !strings.Contains(stdout.String(), "2 of 2 scenarios passed") {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	if n := strings.Count(stderr.String(), "lab: starting cluster"); n != 1 {
		t.Errorf("the lab started %d times, want once", n)
	}
	if !strings.Contains(stderr.String(), "lab: cluster lab-2/lab (3 control planes, 2 workers), prepared during the last scenario") ||
		!strings.Contains(stderr.String(), "lab: cluster lab-2/lab Running in") {
		t.Errorf("stderr lacks the second scenario's fresh cluster")
	}
	for sc, ns := range map[string]string{"power-off-worker": `"namespace":"default"`, "stop-kubelet-worker": `"namespace":"lab-2"`} {
		b, err := os.ReadFile(filepath.Join(out, sc, "journal.jsonl"))
		if err != nil || !strings.Contains(string(b), ns) {
			t.Errorf("journal of %s: %v; want its fault in %s:\n%s", sc, err, ns, b)
		}
	}
}

// TestSkipBeforeLab: a workload scenario on the simulated tier is skipped
// before any lab starts (none could start here: no assets), with the
// engine's reason; its exit code is 0, or --skipped-exit-code's.
func TestSkipBeforeLab(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir()) // a lab start would fail
	for _, tc := range []struct {
		args []string
		code int
	}{
		{nil, exitPass},
		{[]string{"--skipped-exit-code", "4"}, 4},
	} {
		var stdout, stderr bytes.Buffer
		code := execute(append([]string{"run", "pdb-blocks-drain", "--artifacts", t.TempDir()}, tc.args...), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), "SKIPPED") || !strings.Contains(stdout.String(), "lacks capability Workloads") {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.code, stdout.String(), stderr.String())
		}
		if strings.Contains(stderr.String(), "lab: starting") {
			t.Errorf("a lab was started for a scenario it would skip:\n%s", stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"run", "pdb-blocks-drain", "--skipped-exit-code", "200"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("--skipped-exit-code 200: exit %d", code)
	}
}
