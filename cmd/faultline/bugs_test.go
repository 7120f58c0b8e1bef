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

// TestIntegrationBug14197 runs the catalogue's
// replace-control-plane-keeps-learner, on a Kubernetes 1.30 cluster whose
// replacement control plane's etcd member starts 10s after kubeadm adds it
// as a learner (its kubelet registers through the endpoint meanwhile, as
// before kubeadm's local mode): on the v1.13
// stack (Cluster API v1.13.6, which has cluster-api #14197) KCP removes the
// unnamed learner and the join fails, so the run fails naming
// etcd-healthy; on v1.14 (v1.14.2, with the fix) it passes. Both runs show
// the bug's window first: the new control plane's Node with no etcd member
// running. Nightly: it builds the v1.14 stack on first use, and the
// failing run waits out its 3m budget. (TestIntegrationRealNodeLearner
// shows why 1.35 has no such window, on both tiers.)
func TestIntegrationBug14197(t *testing.T) {
	labtest.Require(t)
	nightly.Only(t)
	for _, tc := range []struct {
		release string
		pass    bool
	}{
		{"v1.13", false},
		{"v1.14", true},
	} {
		t.Run(tc.release, func(t *testing.T) {
			dir := t.TempDir()
			var out, errOut bytes.Buffer
			code := execute([]string{"run", "replace-control-plane-keeps-learner", "--release", tc.release, "--artifacts", dir}, &out, &errOut)
			t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
			res, err := artifacts.ReadResult(dir)
			if err != nil {
				t.Fatal(err)
			}
			window := false
			for _, p := range res.Phases {
				window = window || (p.Name == "node-before-member" && p.OK)
			}
			if !window {
				t.Fatalf("the replacement never had its Node before its etcd member (phases %+v): the run shows nothing of the bug", res.Phases)
			}
			if tc.pass {
				if code != exitPass || res.Verdict != engine.Pass {
					t.Fatalf("exit %d, verdict %s (%s): want a pass, v1.14.2 keeps the unnamed learner", code, res.Verdict, res.Reason)
				}
				return
			}
			if code != exitFail || res.Verdict != engine.Fail {
				t.Fatalf("exit %d, verdict %s (%s): want a failure, v1.13.6 removes the unnamed learner", code, res.Verdict, res.Reason)
			}
			if !strings.Contains(res.Reason, "etcd-healthy") {
				t.Errorf("reason %q does not name etcd-healthy", res.Reason)
			}
		})
	}
}
