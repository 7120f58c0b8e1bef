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
			code, res := runShowingBug(t, []string{"upgrade-from-v1-11-rolls-out-nothing", "--set", "release.to=" + tc.to},
				"join-config-without-control-plane", "the joined control planes' KubeadmConfigs did not lack joinConfiguration.controlPlane")
			if tc.pass {
				wantBugVerdict(t, code, res, true, "v1.13.6 has the fix")
				return
			}
			wantBugVerdict(t, code, res, false, "v1.13.4 rolls the joined control planes out", "machine-unchanged", "Machine/")
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
			code, res := runShowingBug(t, []string{"replace-control-plane-keeps-learner", "--release", tc.release},
				"node-before-member", "the replacement never had its Node before its etcd member")
			if tc.pass {
				wantBugVerdict(t, code, res, true, "v1.14.2 keeps the unnamed learner")
				return
			}
			wantBugVerdict(t, code, res, false, "v1.13.6 removes the unnamed learner", "etcd-healthy")
		})
	}
}

// runShowingBug runs faultline run with args into a folder of its own and
// returns its exit code and result. It fails the test unless the run
// reached the bug's precondition phase: without it, the run shows nothing
// of the bug (missing says what was missing).
func runShowingBug(t *testing.T, args []string, precondition, missing string) (int, *engine.Result) {
	t.Helper()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := execute(append(append([]string{"run"}, args...), "--artifacts", dir), &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	res, err := artifacts.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Phases {
		if p.Name == precondition && p.OK {
			return code, res
		}
	}
	t.Fatalf("%s (phases %+v): the run shows nothing of the bug", missing, res.Phases)
	return 0, nil
}

// wantBugVerdict fails the test unless the run passed (pass), or failed
// with a reason naming every one of names; why is what the release does.
func wantBugVerdict(t *testing.T, code int, res *engine.Result, pass bool, why string, names ...string) {
	t.Helper()
	switch {
	case pass && (code != exitPass || res.Verdict != engine.Pass):
		t.Fatalf("exit %d, verdict %s (%s): want a pass, %s", code, res.Verdict, res.Reason, why)
	case !pass && (code != exitFail || res.Verdict != engine.Fail):
		t.Fatalf("exit %d, verdict %s (%s): want a failure, %s", code, res.Verdict, res.Reason, why)
	}
	for _, n := range names {
		if !strings.Contains(res.Reason, n) {
			t.Errorf("reason %q does not name %s (targets %+v)", res.Reason, n, res.Targets)
		}
	}
}
