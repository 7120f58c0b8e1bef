package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/nightly"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestIntegrationRunOtherRelease runs power-off-worker and delete-cp-vm on
// a stack other than the compiled one, as that release's own manager
// processes (built on first use into the cache of built releases), and
// checks that each result names the release and the versions its managers
// reported.
func TestIntegrationRunOtherRelease(t *testing.T) {
	labtest.Require(t)
	stack := lab.Stacks()[1]
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := execute([]string{"run", "power-off-worker", "delete-cp-vm", "--release", stack.Name, "--artifacts", dir}, &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, name := range []string{"power-off-worker", "delete-cp-vm"} {
		if want := "scenario " + name + " on lab (compressed time profile, release " + stack.Name + "): PASS"; !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
		res, err := artifacts.ReadResult(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		r := res.Release
		if r == nil || r.Stack != stack.Name || r.ClusterAPI != stack.ClusterAPI || r.CAPV != stack.CAPV || r.InProcess {
			t.Fatalf("%s: result.json release %+v, want stack %s as processes", name, r, stack)
		}
		want := map[string]string{"capi-manager": stack.ClusterAPI, "kcp-manager": stack.ClusterAPI, "cabpk-manager": stack.ClusterAPI, "capv-manager": stack.CAPV}
		for m, v := range want {
			if r.Managers[m] != v {
				t.Errorf("%s: %s reported version %q, want %q (the build stamps it)", name, m, r.Managers[m], v)
			}
		}
		// The managers' own metrics, read over loopback.
		if adds := queueAdds(t, filepath.Join(dir, name)); adds["capi-manager/machine"] == 0 {
			t.Errorf("%s: queues.json: %v, want capi-manager/machine", name, adds)
		}
	}
}

// TestRunRefusesUnknownRelease: an unknown stack or an incoherent pair is
// a usage error that lists the supported stacks.
func TestRunRefusesUnknownRelease(t *testing.T) {
	for _, release := range []string{"v1.9", "v1.13.6+v1.15.2", "v1.12.10+", "v1.10.4"} {
		var out, errOut bytes.Buffer
		code := execute([]string{"run", "power-off-worker", "--release", release, "--dry-run"}, &out, &errOut)
		if code != exitUsage {
			t.Errorf("--release %s: exit %d, want %d\n%s", release, code, exitUsage, errOut.String())
		}
		for _, s := range lab.Stacks() {
			if !strings.Contains(errOut.String(), s.String()) {
				t.Errorf("--release %s: the error does not list %s:\n%s", release, s, errOut.String())
			}
		}
	}
}

// TestReleaseOnlyOnTheLab: --release chooses the lab's stack; with another
// provider it would do nothing, so it is refused.
func TestReleaseOnlyOnTheLab(t *testing.T) {
	var out, errOut bytes.Buffer
	code := execute([]string{"run", "power-off-worker", "--provider", "vsphere", "--release", lab.Stacks()[1].Name, "--dry-run"}, &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "--release sets how the lab runs; it does nothing with --provider vsphere") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}

// TestIntegrationUpgradeManagement runs the catalogue's
// upgrade-management-during-remediation: a lab on the v1.12 stack loses
// a worker, its management plane goes to v1.13 in place once the Node is
// NotReady, and the new release remediates the worker while no other
// Machine is rolled out. The result names both releases, the upgrade's
// stages are on the timeline, and the worker was found unhealthy only
// after the upgrade had ended.
func TestIntegrationUpgradeManagement(t *testing.T) {
	labtest.Require(t)
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := execute([]string{"run", "upgrade-management-during-remediation", "--artifacts", dir}, &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if want := "release v1.12 upgraded to v1.13): PASS"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q", want)
	}
	res, err := artifacts.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Release
	if r == nil || r.Stack != "v1.12" || r.Managers["capi-manager"] != lab.Stacks()[1].ClusterAPI || r.UpgradedTo == nil || r.UpgradedTo.Stack != "v1.13" || r.UpgradedTo.ClusterAPI != lab.Stacks()[0].ClusterAPI {
		t.Fatalf("result.json release %+v, want v1.12 (managers %s) upgraded to v1.13", r, lab.Stacks()[1].ClusterAPI)
	}
	var upgraded time.Time
	for _, f := range res.Faults {
		if f.Kind == engine.FaultUpgradeManagement && f.InjectedAt != nil {
			upgraded = *f.InjectedAt
		}
	}
	if upgraded.IsZero() {
		t.Fatalf("no upgrade.management fault injected: %+v", res.Faults)
	}
	for _, p := range res.Phases {
		if p.Name == "machine-unhealthy" && (p.ObservedAt == nil || p.ObservedAt.Before(upgraded)) {
			t.Errorf("machine-unhealthy at %v, before the upgrade ended at %v: the old release remediated", p.ObservedAt, upgraded)
		}
	}
	tl, err := os.ReadFile(filepath.Join(dir, "timeline.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"stopping the v1.12 managers", "installing the v1.13 CRDs", "starting the v1.13 controllers"} {
		if !strings.Contains(string(tl), stage) {
			t.Errorf("timeline lacks the stage %q", stage)
		}
	}
}

// TestIntegrationUpgradeChain walks the path a fleet takes:
// upgrade-chain-from-v1-11 goes from the v1.11 stack to v1.12, then to
// v1.13, Cluster API's post-upgrade checks after each, then v1.13
// remediates a lost worker. result.json names the start, the end and the
// release in between. Nightly: it builds the v1.11 stack on first use.
func TestIntegrationUpgradeChain(t *testing.T) {
	labtest.Require(t)
	nightly.Only(t)
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := execute([]string{"run", "upgrade-chain-from-v1-11", "--artifacts", dir}, &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	if code != exitPass {
		t.Fatalf("exit %d", code)
	}
	if want := "release v1.11 upgraded to v1.13 via v1.12): PASS"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q", want)
	}
	res, err := artifacts.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Release
	if r == nil || r.Stack != "v1.11" || r.UpgradedTo == nil || r.UpgradedTo.Stack != "v1.13" || len(r.Via) != 1 || r.Via[0].Stack != "v1.12" || r.Via[0].Managers["capi-manager"] != "v1.12.10" {
		t.Fatalf("result.json release %+v, want v1.11 upgraded to v1.13 via v1.12 (its managers v1.12.10)", r)
	}
}

// lab releases lists every stack, the default first, as a table or as
// JSON (-o json) with the same facts; another format is refused.
func TestLabReleasesOutput(t *testing.T) {
	t.Setenv("FAULTLINE_RELEASES", t.TempDir()) // nothing built there
	var out, errOut bytes.Buffer
	if code := execute([]string{"lab", "releases", "-o", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rows []stackRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("lab releases -o json: %v\n%s", err, out.String())
	}
	if len(rows) != len(lab.Stacks()) || !rows[0].Default || !rows[0].InProcess || rows[1].Default {
		t.Fatalf("rows %+v: want every stack, the compiled default first", rows)
	}
	for _, r := range rows[1:] {
		if r.Built || r.Dir == "" {
			t.Errorf("stack %s: built %v in %q, want not built in an empty cache, with where it goes", r.Name, r.Built, r.Dir)
		}
	}
	out.Reset()
	if code := execute([]string{"lab", "releases"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), rows[1].Name) || !strings.Contains(out.String(), "no (on first use, or --build "+rows[1].Name) {
		t.Errorf("lab releases: exit %d\n%s", code, out.String())
	}
	if code := execute([]string{"lab", "releases", "-o", "yaml"}, &out, &errOut); code != exitUsage {
		t.Errorf("lab releases -o yaml: exit %d, want %d", code, exitUsage)
	}
}
