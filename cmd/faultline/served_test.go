package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/faultline-dev/faultline/artifacts"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runOnServedLab runs a destructive scenario in its own process on the
// running lab name (`lab up --control-planes 1 --workers 1 --pool 1`,
// whose management cluster c reads) with --lab: it passes on a cluster
// the lab kept ready, never the lab's own, and afterwards the lab's pool
// is as it was: that cluster gone, another of its shape Running in its
// place. A scenario that names no release runs on the lab's, release.
func runOnServedLab(t *testing.T, bin string, env []string, name, release string, c client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pool := func() []string {
		var clusters clusterv1.ClusterList
		if err := c.List(ctx, &clusters); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, cl := range clusters.Items {
			keys = append(keys, cl.Namespace+"/"+cl.Name)
		}
		slices.Sort(keys)
		return keys
	}
	before := pool()
	if len(before) != 2 || before[0] != "default/lab-1" {
		t.Fatalf("the lab's clusters before the run: %v; want its own and one ready", before)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "power-off-worker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "small.yaml")
	small := strings.NewReplacer("controlPlanes: 3", "controlPlanes: 1", "workers: 2", "workers: 1").Replace(string(b))
	write(t, file, small)
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "run", file, "--lab", name, "--artifacts", out)
	cmd.Env = env
	got, err := cmd.CombinedOutput()
	t.Logf("run --lab %s:\n%s", name, got)
	if err != nil || !strings.Contains(string(got), "PASS in") {
		t.Fatalf("run --lab: %v", err)
	}
	if res, err := artifacts.ReadResult(out); err != nil || res.Release == nil || res.Release.Stack != release {
		t.Errorf("the run's release: %+v, %v; want the lab's, %s", res, err, release)
	}
	j, err := os.ReadFile(filepath.Join(out, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"namespace":"([^"]+)"`).FindStringSubmatch(string(j))
	if m == nil || m[1]+"/lab" != before[1] {
		t.Fatalf("the run's fault was not in the cluster the lab kept ready, %s:\n%s", before[1], j)
	}
	// The pool as it was: the leased cluster gone, another in its place
	// with every Machine Running.
	var after []string
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		after = pool()
		if len(after) != 2 || slices.Contains(after, before[1]) {
			return false, nil
		}
		var machines clusterv1.MachineList
		ns, _, _ := strings.Cut(after[1], "/")
		if err := c.List(ctx, &machines, client.InNamespace(ns)); err != nil {
			return false, err
		}
		running := 0
		for _, m := range machines.Items {
			if m.Status.Phase == string(clusterv1.MachinePhaseRunning) {
				running++
			}
		}
		return running == 2, nil
	})
	if err != nil {
		t.Errorf("the lab's pool after the run: clusters %v, want default/lab-1 and a new one Running: %v", after, err)
	}
	// With no flag that says where, a run goes to the one running lab
	// that serves runs, and says so.
	cmd = exec.CommandContext(ctx, bin, "run", file, "--dry-run", "--artifacts", t.TempDir())
	cmd.Env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "FAULTLINE_NO_SERVED_LAB=") })
	got, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "faultline: running on lab "+name+", which 'faultline lab up' keeps running") || !strings.Contains(string(got), "PASS (dry run") {
		t.Errorf("a run with no flag beside the lab: %v\n%s", err, got)
	}
}
