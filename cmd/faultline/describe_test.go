package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// describe shows a catalogue scenario's parameters, targets and each
// phase with its budget (a --set value in place of the default), and -o
// yaml is the file itself.
func TestDescribe(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := execute([]string{"describe", "power-off-worker", "--set", "budget.unhealthy=7m"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Name:        power-off-worker\n", "References:  seed 002", "Requires:    VMPower", "budget.unhealthy             7m (--set; default 60s)\n",
		"victim         1 of role=worker, picked at random", "injects vm.power-off on victim", "phase machine-unhealthy: machine-unhealthy on victim, within 7m0s of"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := execute([]string{"describe", catalogueScenario, "-o", "yaml"}, &out, &errOut); code != 0 {
		t.Fatalf("-o yaml: exit %d: %s", code, errOut.String())
	}
	if src, err := os.ReadFile(catalogueScenario); err != nil || out.String() != string(src) {
		t.Errorf("describe -o yaml is not the file (%v)", err)
	}
	errOut.Reset()
	if code := execute([]string{"describe", "no-such-scenario"}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "no-such-scenario") {
		t.Errorf("an unknown scenario: exit %d: %s", code, errOut.String())
	}
}

// init --from copies a catalogue scenario under a new name, and it
// validates; an unknown one is refused with the catalogue's names.
func TestInitFrom(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	if code := execute([]string{"init", "my-quorum", "--from", "kill-etcd-quorum"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	b, err := os.ReadFile("my-quorum.yaml")
	if err != nil || !strings.Contains(string(b), "\n  name: my-quorum\n") || strings.Contains(string(b), "../docs/") {
		t.Fatalf("my-quorum.yaml (%v):\n%s", err, b)
	}
	if code := execute([]string{"validate", "my-quorum.yaml"}, &out, &errOut); code != 0 {
		t.Errorf("validate: exit %d: %s", code, errOut.String())
	}
	errOut.Reset()
	if code := execute([]string{"init", "other", "--from", "kill-etcd"}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "kill-etcd-quorum") {
		t.Errorf("--from kill-etcd: exit %d: %s", code, errOut.String())
	}
}

// The shell completes scenario names, providers, each command's output
// formats and the parameters --set overrides.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"__complete run power-off-w":             "power-off-worker\npower-off-worker-workload\n",
		"__complete run x --provider ":           "lab\ncapi\nvsphere\nkind\n",
		"__complete check -o ":                   "text\njson\nyaml\njunit\n",
		"__complete describe kill-etcd-q":        "kill-etcd-quorum\nkill-etcd-quorum-apps\n",
		"__complete init x --from kind-po":       "kind-policy-blocks-eviction\nkind-power-off-worker\nkind-power-off-worker-workload\n",
		"__complete run power-off-worker --set ": "budget.deleted=\tdefault 60s\nbudget.destroyed=\tdefault 90s\n",
	} {
		var out, errOut bytes.Buffer
		a := strings.Fields(args)
		if strings.HasSuffix(args, " ") {
			a = append(a, "")
		}
		if code := execute(a, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), want) {
			t.Errorf("%s: exit %d:\n%s", args, code, out.String())
		}
	}
}

// describe -o json prints the scenario as indented JSON, as the other -o
// json outputs are, and -o yaml the file itself.
func TestDescribeJSONIndented(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := execute([]string{"describe", "power-off-worker", "-o", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !json.Valid(out.Bytes()) || !strings.HasPrefix(out.String(), "{\n  \"apiVersion\": \"faultline.dev/v1alpha1\",\n") {
		t.Errorf("describe -o json: want indented JSON, got:\n%.200s", out.String())
	}
}
