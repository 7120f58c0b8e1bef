package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/nightly"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/kind/kindtest"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/scenarios/scenariotest"
	"github.com/faultline-dev/faultline/session/runs/jobs"
)

// TestIntegrationOnCluster runs scenarios as the pods of an Indexed Job on
// a kind cluster, faultline's image (hack/image.sh) loaded into its node
// as kind loads images and deploy/runs applied as a user applies it: two
// scenarios, two pods at a time, give both results, reports and the
// run's index here and leave no Job, pod or ConfigMap; then a pod deleted
// while its fault holds undoes it (SIGTERM, as Ctrl-C) and its run comes
// back interrupted, the worker powered on again. Nightly, so does one
// whose run is interrupted here (SIGINT to faultline), and one whose
// container is killed outright is reported interrupted, saying so.
func TestIntegrationOnCluster(t *testing.T) {
	image := requireKindImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	kc, contextName, kube := kindForJobs(ctx, t, image)
	t.Setenv("KUBECONFIG", kc)
	image = loadFaultlineImage(ctx, t, contextName)

	dir := t.TempDir()
	a, b := smallScenario(t, dir, "power-off-worker.yaml", "pod-a"), smallScenario(t, dir, "stop-kubelet-worker.yaml", "pod-b")
	out := filepath.Join(t.TempDir(), "run")
	history := t.TempDir()
	var stdout, stderr bytes.Buffer
	began := time.Now()
	code := execute([]string{"run", a, b, "--on-cluster", contextName, "--parallel", "2", "--image", image, "--artifacts", out, "--history", history}, &stdout, &stderr)
	t.Logf("two scenarios in pods: exit %d in %s\n%s\nstderr:\n%s", code, time.Since(began).Round(time.Second), stdout.String(), stderr.String())
	if code != 0 || !strings.Contains(stdout.String(), "2 of 2 scenarios passed") {
		t.Fatalf("exit %d, want both passed", code)
	}
	for _, sc := range []string{"pod-a", "pod-b"} {
		res, err := artifacts.ReadResult(filepath.Join(out, sc))
		if err != nil || res.Verdict != engine.Pass {
			t.Errorf("%s: %v, %v", sc, res, err)
		}
		for _, f := range []string{artifacts.ReportFile, artifacts.JUnitFile, artifacts.TimelineFile, artifacts.JournalFile} {
			if _, err := os.Stat(filepath.Join(out, sc, f)); err != nil {
				t.Errorf("%s: %v", sc, err)
			}
		}
		if !strings.Contains(stderr.String(), sc+": phase/") {
			t.Errorf("no progress line of %s streamed", sc)
		}
	}
	for _, f := range []string{artifacts.IndexFile, artifacts.JUnitFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the run's %s: %v", f, err)
		}
	}
	if h, err := artifacts.OpenHistory(history); err != nil {
		t.Error(err)
	} else if _, ok, _ := h.Took("pod-a", "lab", "compressed"); !ok {
		t.Error("the history has no passing run of pod-a")
	}
	requireNothingLeft(ctx, t, kube)

	hold := filepath.Join(dir, "hold.yaml")
	write(t, hold, strings.Replace(scenariotest.HoldWorkers, "spec:\n", "spec:\n  lab: {controlPlanes: 1, workers: 1, workerMHC: false}\n", 1))
	held := heldRun{bin: buildFaultline(t), args: []string{"run", hold, "--on-cluster", contextName, "--image", image}, kube: kube}
	undone := func(how string, res *engine.Result) {
		if res.Verdict != engine.Interrupted || len(res.Faults) == 0 || res.Faults[0].UndoneAt == nil {
			t.Errorf("%s: result %s, faults %+v; want interrupted with the power-off undone", how, res.Verdict, res.Faults)
		}
	}
	// Its pod deleted by anyone: SIGTERM, as Ctrl-C.
	undone("pod deleted", held.run(ctx, t, func(p *corev1.Pod, _ *os.Process) {
		if err := kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}))
	if !nightly.Enabled() {
		t.Log("Ctrl-C here and a container killed outright: make test-nightly runs them")
		return
	}
	// Ctrl-C here: the pod is deleted, and its interrupted run comes back.
	undone("Ctrl-C", held.run(ctx, t, func(_ *corev1.Pod, proc *os.Process) {
		if err := proc.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}))
	// Its container killed outright (SIGKILL, no grace: a deleted pod,
	// even with grace 0, gets SIGTERM first), the pod sends nothing back:
	// its run is reported interrupted, saying so, with its own folder.
	res := held.run(ctx, t, func(p *corev1.Pod, _ *os.Process) {
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		if out, err := (kind.ExecDocker{}).Run(ctx, "exec", p.Spec.NodeName, "ctr", "--namespace=k8s.io", "tasks", "kill", "--signal", "SIGKILL", id); err != nil {
			t.Fatalf("ctr tasks kill: %v\n%s", err, out)
		}
	})
	if res.Verdict != engine.Interrupted || !strings.Contains(res.Reason, "ended before it sent its run folder back") {
		t.Errorf("result %s (%s); want interrupted, the pod's end named", res.Verdict, res.Reason)
	}
}

// heldRun is a faultline run of a scenario that holds its fault, as a
// process of its own, on a Job's pod.
type heldRun struct {
	bin  string
	args []string
	kube kubernetes.Interface
}

// run starts it, waits for its pod's fault, calls stop with the pod and
// the process, and returns the result that came back, once the run
// ended and left nothing in the cluster.
func (h heldRun) run(ctx context.Context, t *testing.T, stop func(*corev1.Pod, *os.Process)) *engine.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.CommandContext(ctx, h.bin, append(h.args, "--artifacts", out)...)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	waitFor(t, 5*time.Minute, "the pod's fault injected", func() bool { return strings.Contains(log.String(), "hold-workers: injected vm.power-off") })
	pods, err := h.kube.CoreV1().Pods(jobsNamespace).List(ctx, metav1.ListOptions{LabelSelector: jobs.LabelRun})
	if err != nil || len(pods.Items) != 1 || len(pods.Items[0].Status.ContainerStatuses) != 1 {
		t.Fatalf("the Job's pods: %v, %v", pods, err)
	}
	stop(&pods.Items[0], cmd.Process)
	select {
	case err = <-ended:
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the run did not end:\n%s", log.String())
	}
	t.Logf("exit %v\n%s", err, log.String())
	res, err := artifacts.ReadResult(filepath.Join(out, "hold-workers"))
	if err != nil {
		t.Fatal(err)
	}
	requireNothingLeft(ctx, t, h.kube)
	return res
}

// requireKindImage skips the test without Docker or the kind node image
// (FAULTLINE_REQUIRE_KIND makes that a failure), and returns the image.
func requireKindImage(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("kind integration test: skipped under -short")
	}
	if labtest.RaceEnabled {
		t.Skip("kind integration test: hack/test.sh runs it in its pass without -race, beside the lab's")
	}
	fail := t.Skip
	if os.Getenv("FAULTLINE_REQUIRE_KIND") != "" {
		fail = t.Fatal
	}
	if err := kind.Available(context.Background(), kind.ExecDocker{}); err != nil {
		fail("kind integration test: " + err.Error())
	}
	image, err := kind.NewestImage(context.Background(), kind.ExecDocker{})
	if err != nil {
		fail("kind integration test: " + err.Error())
	}
	return image
}

// kindForJobs is a kind cluster of one node, removed when the test ends,
// with deploy/runs applied by kubectl on its node: its kubeconfig, context
// and a clientset.
func kindForJobs(ctx context.Context, t *testing.T, image string) (string, string, kubernetes.Interface) {
	state := t.TempDir()
	t.Setenv("PATH", kind.ShimPATH(state, os.Getenv("PATH")))
	name := fmt.Sprintf("fl-jobs-%d", time.Now().Unix()%100000)
	log := funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{})
	_, _, err := kind.Up(ctx, kind.UpOptions{Name: name, ControlPlanes: 1, Image: image, State: state, Log: log})
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := kind.Down(cctx, state, name, nil, log); err != nil {
			t.Errorf("kind down: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	node := name + "-control-plane"
	d := kind.ExecDocker{}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := d.Run(ctx, "cp", filepath.Join(root, "deploy", "runs"), node+":/faultline-runs"); err != nil {
		t.Fatalf("docker cp: %v\n%s", err, out)
	}
	if out, err := d.Run(ctx, "exec", node, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf", "apply", "-k", "/faultline-runs"); err != nil {
		t.Fatalf("kubectl apply -k deploy/runs: %v\n%s", err, out)
	}
	kc := kind.KubeconfigPath(state, name)
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kc, "kind-" + name, kube
}

// loadFaultlineImage builds faultline's image (hack/image.sh) and loads
// it into the nodes of the kind cluster of context as `kind load
// docker-image` does (nodeutils.LoadImageArchive); it returns its tag.
func loadFaultlineImage(ctx context.Context, t *testing.T, contextName string) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	image := kindtest.FaultlineImage(ctx, t, root)
	nodes, err := kindcluster.NewProvider(kindcluster.ProviderWithDocker()).ListInternalNodes(strings.TrimPrefix(contextName, "kind-"))
	if err != nil || len(nodes) == 0 {
		t.Fatalf("kind nodes: %v, %v", nodes, err)
	}
	for _, n := range nodes {
		save := exec.CommandContext(ctx, "docker", "save", image)
		archive, err := save.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := save.Start(); err != nil {
			t.Fatal(err)
		}
		if err := nodeutils.LoadImageArchive(n, archive); err != nil {
			t.Fatalf("load %s into %s: %v", image, n, err)
		}
		if err := save.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	return image
}

// requireNothingLeft fails the test when a Job, pod or ConfigMap of a run
// is still in the runs' namespace.
func requireNothingLeft(ctx context.Context, t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: jobs.LabelRun}
	j, err := kube.BatchV1().Jobs("faultline-runs").List(ctx, sel)
	if err != nil || len(j.Items) > 0 {
		t.Errorf("Jobs left: %v, %v", j, err)
	}
	p, err := kube.CoreV1().Pods("faultline-runs").List(ctx, sel)
	if err != nil || len(p.Items) > 0 {
		t.Errorf("pods left: %d, %v", len(p.Items), err)
	}
	c, err := kube.CoreV1().ConfigMaps("faultline-runs").List(ctx, sel)
	if err != nil || len(c.Items) > 0 {
		t.Errorf("ConfigMaps left: %d, %v", len(c.Items), err)
	}
}

// TestOnClusterRefuses: what --on-cluster cannot honour is refused before
// anything is contacted, naming the flag; a context the kubeconfig lacks
// is named with those it has.
func TestOnClusterRefuses(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	write(t, kc, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: mine, context: {cluster: c, user: u}}]\ncurrent-context: mine\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "vsphere"}, "does not run with --provider vsphere"},
		{[]string{"--nodes", "containers"}, "--nodes containers: a pod runs no containers"},
		{[]string{"--retain"}, "--retain leaves faults in place"},
		{[]string{"--context", "mine"}, "--context does nothing with it"},
		{[]string{"--namespace", "Not_A_Name"}, `--namespace "Not_A_Name": expected a Kubernetes namespace name`},
		{nil, "--image: this faultline (version dev) was not built by hack/image.sh"},
		{[]string{"--image", "faultline.dev/faultline:v1", "--on-cluster", "theirs"}, `kubeconfig context "theirs" not found; it has: mine`},
	} {
		args := append([]string{"run", "power-off-worker", "--on-cluster", "mine", "--kubeconfig", kc}, tc.args...)
		var stdout, stderr bytes.Buffer
		code := execute(args, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"run", "power-off-worker", "--image", "x"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--image says what --on-cluster's Job runs") {
		t.Errorf("--image without --on-cluster: exit %d, %q", code, stderr.String())
	}
}

// TestPodArgs: a Job's pods get the flags that say how their scenario and
// lab run, each value of a repeated one, and none that say where or what
// happens here.
func TestPodArgs(t *testing.T) {
	cmd := newRunCommand()
	if err := cmd.ParseFlags([]string{"--set", "a=1", "--set", "b=2", "--release", "v1.12", "--history", "h", "--parallel", "2", "--on-cluster", "ci"}); err != nil {
		t.Fatal(err)
	}
	if got, want := podArgs(cmd.Flags()), []string{"--release=v1.12", "--set=a=1", "--set=b=2"}; !slices.Equal(got, want) {
		t.Errorf("pod args %q, want %q", got, want)
	}
}
