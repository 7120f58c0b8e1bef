package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestCheckBadInput: bad flags and an unreachable cluster end with exit
// 2 and 3 and say why, within the deadline.
func TestCheckBadInput(t *testing.T) {
	dir := t.TempDir()
	unreachable := filepath.Join(dir, "kubeconfig")
	// Port 1 on loopback: nothing listens, the connection is refused.
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: mgmt, context: {cluster: c, user: u}}]
current-context: mgmt
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "--output", "yaml"}, 2, `--output "yaml": expected text, json or junit`},
		{[]string{"check", "--kubeconfig", filepath.Join(dir, "missing")}, 2, "--kubeconfig " + filepath.Join(dir, "missing")},
		{[]string{"check", "--kubeconfig", unreachable, "--context", "other"}, 2, `kubeconfig context "other" not found; it has: mgmt`},
		{[]string{"check", "--kubeconfig", unreachable, "--timeout", "3s"}, 3, "check context mgmt: list Clusters:"},
	} {
		var out, errOut bytes.Buffer
		code := execute(tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}

// TestIntegrationCheckLab: faultline check with no target starts the lab
// and finds nothing above info on it.
func TestIntegrationCheckLab(t *testing.T) {
	labtest.Require(t)
	var out, errOut bytes.Buffer
	code := execute([]string{"check", "--output", "json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	var doc struct {
		Clusters []checkedCluster `json:"clusters"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out.String())
	}
	if len(doc.Clusters) != 1 || doc.Clusters[0].Cluster != "default/lab" || doc.Clusters[0].Skipped != "" {
		t.Fatalf("clusters %+v, want default/lab checked", doc.Clusters)
	}
	for _, f := range doc.Clusters[0].Findings {
		if f.Severity != "info" {
			t.Errorf("a fresh lab: %s finding %s: %s", f.Severity, f.ID, f.Message)
		}
	}
}
