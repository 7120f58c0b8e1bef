package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadConfig: the shipped configs load; bad ones are refused naming
// the field.
func TestLoadConfig(t *testing.T) {
	t.Setenv(EnvConfig, "")
	t.Setenv(EnvProvider, "")
	t.Setenv(EnvNodes, "")
	t.Setenv(EnvRelease, "")
	for _, f := range []string{"lab.yaml", "vsphere.yaml", "kind.yaml"} {
		c, err := LoadConfig(filepath.Join("..", "config", f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if timeout := c.Interval("default/scenario")[0]; timeout == nil {
			t.Errorf("%s: no scenario timeout", f)
		}
	}
	lab, err := LoadConfig("../config/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if lab.Lab.Cluster.ControlPlanes != 3 || lab.Lab.Cluster.ControlPlaneMHC == nil || !*lab.Lab.Cluster.ControlPlaneMHC {
		t.Errorf("lab cluster %+v", lab.Lab.Cluster)
	}
	dir := t.TempDir()
	for body, want := range map[string]string{
		"provider: moon\nintervals: {default/wait-lab: [1m, 1s], default/wait-baseline: [1m, 1s], default/scenario: [1m, 1s]}\n":  `provider: got "moon", expected one of lab, kind, vsphere`,
		"provider: lab\nintervals: {default/wait-lab: [1m], default/wait-baseline: [1m, 1s], default/scenario: [1m, 1s]}\n":       "intervals.default/wait-lab: got 1 values, expected [timeout, poll]",
		"provider: lab\nintervals: {default/wait-lab: [soon, 1s], default/wait-baseline: [1m, 1s], default/scenario: [1m, 1s]}\n": `intervals.default/wait-lab[0]: got "soon"`,
		"provider: lab\nintervals: {default/wait-lab: [1m, 1s], default/wait-baseline: [1m, 1s]}\n":                               "intervals.default/scenario: required",
		"provider: lab\nlab: {cluster: {controlPlanes: 3, wokers: 2}}\n":                                                          `unknown field "wokers"`,
		"provider: lab\nlab: {nodes: vms}\n":                                       `lab.nodes: got "vms", expected simulated or containers`,
		"provider: lab\nlab: {release: v1.9}\n":                                    `lab.release: no stack is named "v1.9": expected one of v1.13 (Cluster API v1.13.6, CAPV v1.16.1)`,
		"provider: kind\nkind: {name: k, existing: true}\nlab: {release: v1.12}\n": `lab.release (or $E2E_RELEASE) "v1.12": the lab's stack; provider kind runs its cluster's own release`,
	} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: %v, want the file and %q", body, err, want)
		}
	}
	t.Setenv(EnvProvider, "vsphere")
	if c, err := LoadConfig("../config/lab.yaml"); err != nil || c.Provider != "vsphere" {
		t.Errorf("PROVIDER overrides: %v %v", c, err)
	}
	t.Setenv(EnvProvider, "")
	t.Setenv(EnvNodes, "containers")
	c, err := LoadConfig("../config/lab.yaml")
	if err != nil || c.Lab.Nodes != "containers" || !c.Lab.spec(c.Lab.Cluster).RealNodes() {
		t.Errorf("NODES overrides: %+v %v", c, err)
	}
	t.Setenv(EnvRelease, "v1.12")
	c, err = LoadConfig("../config/lab.yaml")
	if err != nil || c.Lab.spec(c.Lab.Cluster).Release.Stack != "v1.12" {
		t.Errorf("E2E_RELEASE overrides: %+v %v", c, err)
	}
}
