package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/management"
)

// cutScenario cuts CAPV's way to vCenter and restores it.
const cutScenario = `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata:
  name: cut-vcenter
spec:
  requires: [VCenterReach]
  timeout: 5m
  steps:
    - name: cut
      inject:
        fault: vcenter.unreachable
    - name: back
      undo:
        fault: cut
`

// TestIntegrationVCenterCutRefused: vcenter.unreachable on a management
// cluster whose network enforces no NetworkPolicy (kind with faultline's
// offline node image: its CNI agent enforces none, where kind's own
// kindnet does) is refused, saying so. A probe pod of faultline's image,
// on a real kubelet beside the pod labelled as CAPV's, reached "vCenter"
// (the node's own address and API server port, outside the pod network)
// without the policy and again under it; the run is an error, not a
// pass, and no policy or probe pod is left. A run killed outright while
// it proves the cut is cleaned up by 'faultline recover'.
func TestIntegrationVCenterCutRefused(t *testing.T) {
	image := requireKindImage(t)
	// Its own journal key: recover reads the journals recorded beside it.
	t.Setenv(engine.EnvJournalKey, filepath.Join(t.TempDir(), "journal.key"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	kc, contextName, kube := kindForJobs(ctx, t, image)
	image = loadFaultlineImage(ctx, t, contextName)
	vcenter := capvCluster(ctx, t, kc, kube)

	file := filepath.Join(t.TempDir(), "cut-vcenter.yaml")
	write(t, file, cutScenario)
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	code := execute([]string{"run", file, "--provider", "capi", "--kubeconfig", kc, "--context", contextName, "--allow-context", contextName,
		"--image", image, "--artifacts", out}, &stdout, &stderr)
	t.Logf("exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	res, err := artifacts.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if code != exitInfra || res.Verdict != engine.Error {
		t.Errorf("exit %d, verdict %s; want an error (%d)", code, res.Verdict, exitInfra)
	}
	for _, want := range []string{"does not enforce NetworkPolicy", "reached " + vcenter, "Nothing was cut"} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("the reason does not say %q: %s", want, res.Reason)
		}
	}
	if left := cutLeft(ctx, t, kube); left != 0 {
		t.Errorf("%d policies or probe pods left", left)
	}

	// Killed outright while it proves the cut, the run leaves its probe
	// pod and maybe the probe's policy; 'faultline recover' deletes
	// them from the journal.
	bin := buildFaultline(t)
	for attempt := 1; ; attempt++ {
		art := t.TempDir()
		run := exec.CommandContext(ctx, bin, "run", file, "--provider", "capi", "--kubeconfig", kc, "--context", contextName, "--allow-context", contextName,
			"--image", image, "--artifacts", art)
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() { ended <- run.Wait() }()
		caught := false
		waitFor(t, time.Minute, "a probe pod, or the run's end", func() bool {
			select {
			case <-ended:
				return true
			default:
			}
			caught = cutLeft(ctx, t, kube) > 0 && run.Process.Kill() == nil
			return caught
		})
		if !caught {
			if attempt == 3 {
				t.Fatal("three runs ended before a probe pod was seen")
			}
			continue
		}
		<-ended
		rec := exec.CommandContext(ctx, bin, "recover", "--allow-context", contextName)
		rec.Env = append(os.Environ(), "ARTIFACTS="+art)
		out, err := rec.CombinedOutput()
		t.Logf("recover: %v\n%s", err, out)
		if err != nil || !strings.Contains(string(out), "vcenter.unreachable: undone (vcenter.reachable)") {
			t.Errorf("recover: %v", err)
		}
		if left := cutLeft(ctx, t, kube); left != 0 {
			t.Errorf("%d policies or probe pods left after recover", left)
		}
		return
	}
}

// cutLeft counts the NetworkPolicies and probe pods in the cluster.
func cutLeft(ctx context.Context, t *testing.T, kube kubernetes.Interface) int {
	t.Helper()
	pols, err := kube.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	probes, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "faultline.dev/probe"})
	if err != nil {
		t.Fatal(err)
	}
	return len(pols.Items) + len(probes.Items)
}

// capvCluster makes the kind cluster look like a CAPV management
// cluster to the cut: CAPV's CRDs from the compiled release's module
// source, a running pod labelled as CAPV's manager (the workload server
// stands in for it: only its labels and node count), and a
// VSphereCluster whose spec.server is the node's address at its API
// server's port. It returns that address.
func capvCluster(ctx context.Context, t *testing.T, kc string, kube kubernetes.Interface) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(logr.Discard())
	var crds []string
	for module, path := range map[string]string{
		"sigs.k8s.io/cluster-api@" + lab.Stacks()[0].ClusterAPI:            "config/crd/bases",
		"sigs.k8s.io/cluster-api-provider-vsphere@" + lab.Stacks()[0].CAPV: "config/default/crd/bases",
	} {
		dir, err := management.ModuleDir(ctx, module)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, filepath.Join(dir, path))
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: crds}); err != nil {
		t.Fatal(err)
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v, %v", nodes, err)
	}
	var address string
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			address = a.Address + ":6443"
		}
	}
	for _, ns := range []string{"capv-system", "ns"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	capv := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "capv-controller-manager", Labels: map[string]string{"cluster.x-k8s.io/provider": "infrastructure-vsphere", "control-plane": "controller-manager"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: engine.WorkloadImage, ImagePullPolicy: corev1.PullNever}}},
	}
	if _, err := kube.CoreV1().Pods("capv-system").Create(ctx, capv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the pod labelled as CAPV's running", func() bool {
		p, err := kube.CoreV1().Pods("capv-system").Get(ctx, capv.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "VSphereCluster",
		"metadata": map[string]any{"name": "c1", "namespace": "ns"},
		"spec":     map[string]any{"server": address},
	}}
	gvr := schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "vsphereclusters"}
	if _, err := dyn.Resource(gvr).Namespace("ns").Create(ctx, vc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return address
}
