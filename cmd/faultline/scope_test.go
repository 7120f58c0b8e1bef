package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestIntegrationRunScope runs power-off-worker against a management
// cluster with two workload clusters, through its kubeconfig and vCenter:
// without --cluster the run is refused (exit 2) naming both; --cluster
// must name one of them; with --cluster and --dry-run every target is a
// Machine of that cluster, the would-be injection is printed, and no VM
// was powered off; run for real with --cluster, its fault lands in that
// cluster and the other's Machines are the same ones afterwards.
func TestIntegrationRunScope(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	shape := scenario.LabSpec{ControlPlanes: 1, Workers: 1}
	l := labtest.Start(t, lab.ClusterSpec{Name: "a", LabSpec: shape}, lab.ClusterSpec{Name: "b", LabSpec: shape})
	paths, err := l.WriteKubeconfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	vc := l.Sim().URL()
	vc.User = url.UserPassword("user", "pass") // vcsim takes any login
	base := []string{"run", "power-off-worker", "--provider", "capi", "--kubeconfig", paths[0], "--allow-context", kc.CurrentContext,
		"--vcenter-url", vc.String(), "--vcenter-ca-file", l.Sim().CAFile(), "--allow-vcenter", vc.Host, "--artifacts", t.TempDir()}
	runArgs := func(extra ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := execute(append(append([]string(nil), base...), extra...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, _, stderr := runArgs()
	if code != 2 || !strings.Contains(stderr, "manages 2 clusters (default/a, default/b): name the one it may touch with --cluster NAMESPACE/NAME") {
		t.Errorf("without --cluster: exit %d, stderr %s", code, stderr)
	}
	code, _, stderr = runArgs("--cluster", "default/c")
	if code != 2 || !strings.Contains(stderr, "--cluster default/c: no such Cluster in context "+kc.CurrentContext+"; its clusters: default/a, default/b") {
		t.Errorf("--cluster default/c: exit %d, stderr %s", code, stderr)
	}
	history := filepath.Join(t.TempDir(), "history")
	code, stdout, stderr := runArgs("--cluster", "default/b", "--dry-run", "--seed", "7", "-o", "json", "--history", history)
	if code != 0 {
		t.Fatalf("dry run: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// A dry run measures nothing: --history is neither made nor added to.
	if _, err := os.Stat(history); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dry run touched --history %s: %v", history, err)
	}
	var res engine.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, stdout)
	}
	if len(res.Planned) != 1 || res.Planned[0].Fault != "vm.power-off" || len(res.Planned[0].Objects) != 1 {
		t.Fatalf("planned %+v", res.Planned)
	}
	for _, tr := range res.Targets {
		for _, o := range tr.Objects {
			if !strings.Contains(o, "/b-") {
				t.Errorf("target %s resolved to %s, outside cluster default/b", tr.Name, o)
			}
		}
	}
	if *res.Targets[0].Seed != 7 {
		t.Errorf("seed %d, want --seed 7", *res.Targets[0].Seed)
	}
	vms, err := l.VCenter().Resolve(ctx, providers.Selector{VM: "*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms {
		if st, err := l.VCenter().PowerState(ctx, vm); err != nil || st != providers.PoweredOn {
			t.Errorf("VM %s is %s (%v) after a dry run", vm.Name, st, err)
		}
	}

	// Without a vCenter, a VM fault cannot reach a Machine's VM: the dry
	// run fails (exit 3), naming why, as the real run would, and nothing
	// is journaled.
	t.Setenv("GOVC_URL", "")
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code = execute([]string{"run", "power-off-worker", "--provider", "capi", "--kubeconfig", paths[0], "--allow-context", kc.CurrentContext,
		"--cluster", "default/b", "--dry-run", "-o", "json", "--artifacts", dir}, &out, &errOut)
	var unreached engine.Result
	if err := json.Unmarshal(out.Bytes(), &unreached); err != nil || code != exitInfra || unreached.Verdict != engine.Error ||
		!strings.Contains(unreached.Reason, "no vCenter is configured (--vcenter-url)") {
		t.Errorf("dry run without a vCenter: exit %d, %v, verdict %s (%s)\n%s", code, err, unreached.Verdict, unreached.Reason, errOut.String())
	}
	if entries, err := engine.ReadJournal(filepath.Join(dir, "journal.jsonl")); err != nil || len(entries) != 0 {
		t.Errorf("dry run without a vCenter journaled %+v (%v)", entries, err)
	}
	// With a vCenter other than the cluster's, the run is refused
	// before it logs in there.
	other, err := lab.StartVCSim(lab.VCSimInput{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ou := other.URL()
	ou.User = url.UserPassword("user", "pass")
	out.Reset()
	errOut.Reset()
	code = execute([]string{"run", "power-off-worker", "--provider", "capi", "--kubeconfig", paths[0], "--allow-context", kc.CurrentContext,
		"--cluster", "default/b", "--dry-run", "--vcenter-url", ou.String(), "--vcenter-ca-file", other.CAFile(), "--artifacts", t.TempDir()}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "vCenter "+ou.Host+" is not the cluster's: its objects name "+vc.Host) {
		t.Errorf("dry run against another vCenter: exit %d\n%s", code, errOut.String())
	}

	// For real: the fault lands in cluster b, and cluster a's Machines
	// are the same ones, untouched, afterwards.
	machinesOfA := func() []string {
		objs, err := l.Provider().Resolve(ctx, providers.Selector{Cluster: "default/a"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range objs {
			names = append(names, o.Name)
		}
		return names
	}
	before := machinesOfA()
	code, stdout, stderr = runArgs("--cluster", "default/b", "-o", "json")
	var run engine.Result
	if err := json.Unmarshal([]byte(stdout), &run); err != nil {
		t.Fatalf("result: %v (exit %d)\n%s\n%s", err, code, stdout, stderr)
	}
	if len(run.Faults) == 0 {
		t.Fatalf("no fault injected (exit %d): %s", code, run.Reason)
	}
	for _, f := range run.Faults {
		if !strings.Contains(f.Target, "/b-") {
			t.Errorf("fault %s on %s, outside cluster default/b", f.ID, f.Target)
		}
	}
	if after := machinesOfA(); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("cluster a's Machines changed: %v, then %v", before, after)
	}
	t.Logf("power-off-worker --cluster default/b: %s (%s), faults %+v", run.Verdict, run.Reason, run.Faults)
}
