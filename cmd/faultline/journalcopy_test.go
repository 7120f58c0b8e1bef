package main

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/scenarios/scenariotest"
)

// TestIntegrationRecoverJournalCopy: a run through a management cluster
// (--provider capi, the lab's kubeconfig and vCenter) powers the worker off
// and is killed with SIGKILL, as a runner dies with its host. Its journal
// copy stays in the cluster (a Secret) and its Lease expires; recover on
// "another host" (a journal folder, heads and cache of its own, the key
// copied, only the kubeconfig) powers the VM back on and deletes the copy.
func TestIntegrationRecoverJournalCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds faultline and runs it in another process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	bin := buildFaultline(t)
	// No health check: the powered-off worker stays as it is until
	// recover, however long the Lease takes to expire.
	l := labtest.Start(t, lab.ClusterSpec{Name: "lab", LabSpec: scenario.LabSpec{ControlPlanes: 1, Workers: 1, WorkerMHC: ptr.To(false)}})
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
	scenario := filepath.Join(t.TempDir(), "hold-workers.yaml")
	if err := os.WriteFile(scenario, []byte(scenariotest.HoldWorkers), 0o600); err != nil {
		t.Fatal(err)
	}
	hostA := t.TempDir()
	keyA := filepath.Join(hostA, "config", "journal.key")
	run := exec.Command(bin, "run", scenario, "--provider", "capi", "--kubeconfig", paths[0], "--allow-context", kc.CurrentContext,
		"--vcenter-url", vc.String(), "--vcenter-ca-file", l.Sim().CAFile(), "--allow-vcenter", vc.Host, "--artifacts", filepath.Join(hostA, "run"))
	run.Env = append(os.Environ(), "FAULTLINE_JOURNAL_KEY="+keyA, "XDG_CACHE_HOME="+filepath.Join(hostA, "cache"))
	out := &lockedBuffer{}
	run.Stdout, run.Stderr = out, out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Process.Kill(); _ = run.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the run's output:\n%s", out.String())
		}
	})

	worker, power := workerVM(t, ctx, l)
	waitFor(t, 2*time.Minute, "the worker powered off and the journal copied", func() bool {
		st, err := power.PowerState(ctx, worker)
		return err == nil && st == providers.PoweredOff && len(journalCopies(t, ctx, l)) == 1
	})
	if err := run.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()

	// Its Lease is no longer renewed: it expires within its 30 s.
	waitFor(t, time.Minute, "the killed run's Lease expired", func() bool {
		var leases coordinationv1.LeaseList
		if err := l.Client().List(ctx, &leases); err != nil {
			return false
		}
		for _, le := range leases.Items {
			if strings.HasPrefix(le.Name, "faultline-machine-") && le.Spec.RenewTime != nil &&
				time.Since(le.Spec.RenewTime.Time) < time.Duration(*le.Spec.LeaseDurationSeconds)*time.Second {
				return false
			}
		}
		return true
	})

	hostB := t.TempDir()
	keyB := filepath.Join(hostB, "runner.key")
	key, err := os.ReadFile(keyA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyB, key, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", filepath.Join(hostB, "cache"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(hostB, "config"))
	t.Setenv("FAULTLINE_JOURNAL_KEY", "")
	t.Setenv("GOVC_USERNAME", "user")
	t.Setenv("GOVC_PASSWORD", "pass")
	t.Setenv("GOVC_TLS_CA_CERTS", l.Sim().CAFile())
	var rout, rerr bytes.Buffer
	code := execute([]string{"recover", "--kubeconfig", paths[0], "--allow-context", kc.CurrentContext, "--journal-key", keyB,
		"--allow-vcenter", vc.Host}, &rout, &rerr)
	t.Logf("recover: exit %d\n%s%s", code, rout.String(), rerr.String())
	if code != exitPass || !strings.Contains(rout.String(), "undone (vm.power-on)") {
		t.Fatalf("recover from the cluster's copy: exit %d, want 0 and the power-off undone", code)
	}
	if st, err := power.PowerState(ctx, worker); err != nil || st != providers.PoweredOn {
		t.Errorf("worker VM %s after recover: %s (%v), want powered on", worker.Name, st, err)
	}
	if left := journalCopies(t, ctx, l); len(left) != 0 {
		t.Errorf("journal copies left after a whole recover: %v", left)
	}
}

// workerVM is the lab cluster's worker Machine, and what reads its VM's
// power state.
func workerVM(t *testing.T, ctx context.Context, l *lab.Lab) (providers.Object, providers.VMPower) {
	t.Helper()
	objs, err := l.Provider().Resolve(ctx, providers.Selector{Role: "worker"})
	if err != nil || len(objs) != 1 {
		t.Fatalf("the lab's worker: %v, %v", objs, err)
	}
	power, err := providers.As[providers.VMPower](l.Provider(), providers.CapVMPower)
	if err != nil {
		t.Fatal(err)
	}
	return objs[0], power
}

// journalCopies are the names of the journal copy Secrets in the lab.
func journalCopies(t *testing.T, ctx context.Context, l *lab.Lab) []string {
	t.Helper()
	var secrets corev1.SecretList
	if err := l.Client().List(ctx, &secrets, client.HasLabels{"faultline.dev/journal"}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range secrets.Items {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	return out
}
