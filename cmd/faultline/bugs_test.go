package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/nightly"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestIntegrationBug14167 runs the catalogue's
// upgrade-from-v1-11-rolls-out-nothing twice, from the v1.11 stack with
// CABPK's spec write refused while two control planes join: upgraded to
// Cluster API v1.12.10 or v1.13.4, which have cluster-api #14167, the run
// fails naming machine-unchanged and the rolled-out Machines; upgraded to
// v1.13 (v1.13.6, with the fix), it passes. Both runs show the bug's precondition first.
// Nightly: it builds the v1.11 and v1.13.4 stacks on first use.
func TestIntegrationBug14167(t *testing.T) {
	labtest.Require(t)
	nightly.Only(t)
	for _, tc := range []struct {
		to   string
		pass bool
	}{
		{"v1.12", false}, // v1.12.10 does not have the fix either
		{"v1.13.4+v1.16.1", false},
		{"v1.13", true},
	} {
		t.Run(tc.to, func(t *testing.T) {
			dir := t.TempDir()
			var out, errOut bytes.Buffer
			code := execute([]string{"run", "upgrade-from-v1-11-rolls-out-nothing", "--set", "release.to=" + tc.to, "--artifacts", dir}, &out, &errOut)
			t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
			res, err := artifacts.ReadResult(dir)
			if err != nil {
				t.Fatal(err)
			}
			precondition := false
			for _, p := range res.Phases {
				precondition = precondition || (p.Name == "join-config-without-control-plane" && p.OK)
			}
			if !precondition {
				t.Fatalf("the joined control planes' KubeadmConfigs did not lack joinConfiguration.controlPlane (phases %+v): the run shows nothing of the bug", res.Phases)
			}
			if tc.pass {
				if code != exitPass || res.Verdict != engine.Pass {
					t.Fatalf("exit %d, verdict %s (%s): want a pass, v1.13.6 has the fix", code, res.Verdict, res.Reason)
				}
				return
			}
			if code != exitFail || res.Verdict != engine.Fail {
				t.Fatalf("exit %d, verdict %s (%s): want a failure, v1.13.4 rolls the joined control planes out", code, res.Verdict, res.Reason)
			}
			var joined string
			for _, tr := range res.Targets {
				if tr.Name == "control-planes" {
					joined = strings.Join(tr.Objects, ",")
				}
			}
			if !strings.Contains(res.Reason, "machine-unchanged") || !strings.Contains(res.Reason, "Machine/") {
				t.Errorf("reason %q names neither machine-unchanged nor a Machine (control planes %s)", res.Reason, joined)
			}
		})
	}
}
