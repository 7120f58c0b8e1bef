package lab_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestIntegrationClusterctlPlan: Cluster API's own clusterctl (built from
// its module source by hack/clusterctl.sh) reads a lab of the v1.12
// stack: `clusterctl upgrade plan`, with the configuration the lab writes
// and no reach to GitHub, lists the four providers at v1.12's versions
// and the newest served as next; after the lab's management plane moves
// to v1.13 (upgrade.management, to the stack in faultline's process), it
// lists v1.13's. Before the lab kept a clusterctl inventory, clusterctl
// said "there must be one core provider, found 0". The lab stops a
// moment after the upgrade, with the new controllers still starting: the
// cleanup's Stop failed on the grace period (a minute) before the cache
// of Secrets' metadata joined the manager's caches (managerCache).
func TestIntegrationClusterctlPlan(t *testing.T) {
	labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	clusterctl := buildClusterctl(ctx, t)
	// v1.12 as the release's own binaries to v1.13 in faultline's
	// process.
	from, to := lab.Stacks()[1], lab.Stacks()[0]
	spec := lab.ClusterSpec{Name: "plan", LabSpec: labconfig.LabSpec{ControlPlanes: 1, Workers: 1, Release: labconfig.ParseRelease(from.Name)}}
	began := time.Now().Truncate(time.Second)
	l := labtest.StartInput(t, lab.Input{Clusters: []lab.ClusterSpec{spec}})
	// kubectl's AGE: a lab started from the stack's stored state has its
	// objects dated from this start, not the state's.
	var ns corev1.Namespace
	if err := l.Client().Get(ctx, client.ObjectKey{Name: "kube-system"}, &ns); err != nil {
		t.Fatal(err)
	} else if created := ns.CreationTimestamp.Time; created.Before(began) {
		t.Errorf("namespace kube-system created at %s, before the lab started (%s)", created, began)
	}
	paths, err := l.WriteKubeconfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	config, err := l.WriteClusterctlConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newest := newestServed()
	for i, stack := range []lab.Stack{from, to} {
		if i > 0 {
			if err := l.Provider().UpgradeManagement(ctx, stack.Name, func(string) {}); err != nil {
				t.Fatalf("upgrade to %s: %v", stack.Name, err)
			}
		}
		plan := upgradePlan(ctx, t, clusterctl, config, paths[0])
		want := map[string][2]string{
			"capi-system/cluster-api":                                 {stack.ClusterAPI, newest.ClusterAPI},
			"capi-kubeadm-bootstrap-system/bootstrap-kubeadm":         {stack.ClusterAPI, newest.ClusterAPI},
			"capi-kubeadm-control-plane-system/control-plane-kubeadm": {stack.ClusterAPI, newest.ClusterAPI},
			"capv-system/infrastructure-vsphere":                      {stack.CAPV, newest.CAPV},
		}
		for name, w := range want {
			if w[0] == w[1] {
				w[1] = "Already up to date"
			}
			if got := plan[name]; got != w {
				t.Errorf("on %s: clusterctl plans %s from %q to %q; want from %q to %q", stack.Name, name, got[0], got[1], w[0], w[1])
			}
		}
	}
}

// newestServed is the newest Cluster API and CAPV versions of the
// stacks served, which clusterctl plans to.
func newestServed() lab.Stack {
	var n lab.Stack
	for _, s := range lab.Stacks() {
		if n.ClusterAPI == "" || version.MustParseSemantic(n.ClusterAPI).LessThan(version.MustParseSemantic(s.ClusterAPI)) {
			n.ClusterAPI = s.ClusterAPI
		}
		if n.CAPV == "" || version.MustParseSemantic(n.CAPV).LessThan(version.MustParseSemantic(s.CAPV)) {
			n.CAPV = s.CAPV
		}
	}
	return n
}

// buildClusterctl builds the compiled release's clusterctl (hack/clusterctl.sh,
// cached by version) and returns its path.
func buildClusterctl(ctx context.Context, t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "hack", "clusterctl.sh"), lab.Stacks()[0].ClusterAPI).Output()
	if err != nil {
		t.Fatalf("hack/clusterctl.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// upgradePlan runs `clusterctl upgrade plan` and returns, by
// NAMESPACE/NAME, each provider's CURRENT VERSION and NEXT VERSION.
func upgradePlan(ctx context.Context, t *testing.T, clusterctl, config, kubeconfig string) map[string][2]string {
	t.Helper()
	cmd := exec.CommandContext(ctx, clusterctl, "upgrade", "plan", "--config", config, "--kubeconfig", kubeconfig)
	// No clusterctl configuration of the user's is read.
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("clusterctl upgrade plan:\n%s", out)
	if err != nil {
		t.Fatalf("clusterctl upgrade plan: %v", err)
	}
	plan := map[string][2]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[2], "Provider") {
			continue
		}
		plan[f[1]+"/"+f[0]] = [2]string{f[3], strings.Join(f[4:], " ")}
	}
	return plan
}
