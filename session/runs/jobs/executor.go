package jobs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
	"github.com/faultline-dev/faultline/session/runs"
)

// Config says where and how the Job runs.
type Config struct {
	// REST reaches the cluster that runs the Job; Context names it for
	// people.
	REST    *rest.Config
	Context string
	// Namespace holds the Job; it must exist, with deploy/runs applied
	// (the pods' service account).
	Namespace string
	// Image is faultline's image (hack/image.sh), which the nodes have.
	Image string
	// Parallel is how many pods run at a time.
	Parallel int
	// Args are the flags of each pod's faultline run (--set, --release,
	// --timeout, ...).
	Args []string
	// History, when set, gets each result that came back, as a run here
	// adds its own, and its report shows each phase against it; with Gate
	// a passing run whose phase regressed against it fails
	// (artifacts.ApplyGate). DryRun results are not added.
	History *artifacts.History
	Gate    bool
	DryRun  bool
	Log     logr.Logger
}

// Executor runs the items of a run of several as the pods of one Indexed
// Job (runs.Executor). Start submits it, Run follows one item's pod, and
// Close deletes the Job, its pods and its ConfigMap.
type Executor struct {
	cfg  Config
	kube kubernetes.Interface
	// name names the Job and its ConfigMap.
	name string
	// index is each item's completion index.
	index map[*runs.Item]int
	// submitted: Start created the ConfigMap, so Close has something to
	// delete. The runner calls both from its own goroutine.
	submitted bool
}

// New is an executor of cfg; nothing is contacted yet.
func New(cfg Config) (*Executor, error) {
	kube, err := kubernetes.NewForConfig(cfg.REST)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cfg.Context, err)
	}
	if cfg.Parallel < 1 {
		cfg.Parallel = 1
	}
	return &Executor{cfg: cfg, kube: kube, name: "faultline-" + rand.String(8), index: map[*runs.Item]int{}}, nil
}

// Name is the name of the Job (and its ConfigMap).
func (e *Executor) Name() string { return e.name }

// Place runs every scenario in a pod of its own, but those the lab would
// skip or labelled for another provider, which are skipped here, as a
// local run skips them.
func (e *Executor) Place(sc *scenario.Scenario) session.Placement {
	if p := session.Place(sc, session.ProviderLab); p.Where == session.Skipped {
		return p
	}
	if why := podRefuses(sc); why != "" {
		return session.Placement{Where: session.Skipped, Why: why + "; run it without --on-cluster"}
	}
	return session.Placement{Where: session.Pod, Why: "a pod of Job " + e.name + " on " + e.cfg.Context}
}

// podRefuses says why a pod's lab cannot run sc, "" when it can: a pod
// runs no containers (real nodes), and has only the stack faultline
// compiles in (no Go toolchain builds another release's managers there).
func podRefuses(sc *scenario.Scenario) string {
	l := sc.Spec.Lab
	switch {
	case l == nil:
		return ""
	case l.RealNodes():
		return "its nodes are real, and a pod runs no containers of its own"
	case session.UpgradesManagement(sc):
		return "it upgrades the management plane to another release, whose managers a pod cannot build"
	}
	if stack, err := l.Release.Resolve(); err == nil && !stack.Compiled {
		return fmt.Sprintf("its release %s runs as that release's own managers, which a pod cannot build", stack.Name)
	}
	return ""
}

// Start submits the Job of items, one index each in their order, with
// their scenario files in a ConfigMap.
func (e *Executor) Start(ctx context.Context, items []*runs.Item) error {
	files := make([]string, len(items))
	for i, it := range items {
		files[i] = string(it.Scenario.Text)
		e.index[it] = i
	}
	if len(items) == 0 {
		return nil
	}
	cm := configMap(e.name, e.cfg.Namespace, files)
	if _, err := e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return e.refused("create ConfigMap", err)
	}
	e.submitted = true
	j := job(e.name, e.cfg.Namespace, e.cfg.Image, len(items), e.cfg.Parallel, e.cfg.Args)
	if _, err := e.kube.BatchV1().Jobs(e.cfg.Namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		return e.refused("create Job", err)
	}
	return nil
}

// refused says what the cluster refused, naming the namespace and what
// sets it up.
func (e *Executor) refused(what string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s in namespace %s on %s: %w (apply deploy/runs first: it makes the namespace and the pods' service account)", what, e.cfg.Namespace, e.cfg.Context, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s in namespace %s on %s: %w (bind the faultline-runner Role of deploy/runs to who runs faultline)", what, e.cfg.Namespace, e.cfg.Context, err)
	}
	return fmt.Errorf("%s in namespace %s on %s: %w", what, e.cfg.Namespace, e.cfg.Context, err)
}

// Run follows it's pod: its log's progress to sl, its run folder into
// it.Dir, its result read from there. A pod that ended without sending its
// folder back is reported interrupted, saying how it ended. On an
// interrupt the pod is deleted, and its undo and folder still awaited.
func (e *Executor) Run(ctx context.Context, it *runs.Item, sl runs.Slot) (*engine.Result, error) {
	idx, ok := e.index[it]
	if !ok {
		return nil, fmt.Errorf("%s is not in Job %s", it.Scenario.Metadata.Name, e.name)
	}
	began := time.Now()
	pod, err := e.waitStarted(ctx, idx)
	if err != nil && ctx.Err() != nil {
		return runs.NotRun(it.Scenario, session.ProviderLab, engine.Interrupted, "interrupted before its pod started", began), nil
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(sl.Out, "job: %s runs in %s on %s\n", it.Scenario.Metadata.Name, podName(pod), e.cfg.Context)
	// An interrupt deletes the pod: it undoes its faults and sends its
	// folder, which is still read, within its grace period.
	follow, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
			e.deletePod(pod.Name)
			// The grace period and a margin, then the log is given up.
			t := time.NewTimer((gracePeriod + 30) * time.Second)
			defer t.Stop()
			select {
			case <-t.C:
				stop()
			case <-follow.Done():
			}
		case <-follow.Done():
		}
	}()
	c := &collector{out: sl.Progress}
	logErr := e.follow(follow, pod.Name, c)
	if c.archive == nil {
		res := e.lost(it, pod.Name, began, errors.Join(logErr, c.err))
		return res, writeLost(it.Dir, res)
	}
	if err := os.MkdirAll(it.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := extract(c.archive, it.Dir); err != nil {
		return nil, fmt.Errorf("the run folder of %s: %w", it.Scenario.Metadata.Name, err)
	}
	res, err := artifacts.ReadResult(it.Dir)
	if err != nil {
		return nil, fmt.Errorf("the run folder of %s has no result: %w", it.Scenario.Metadata.Name, err)
	}
	if e.cfg.History != nil && !e.cfg.DryRun {
		return res, e.againstHistory(res, it.Dir)
	}
	return res, nil
}

// againstHistory does here what a run here does with the history, which
// the pod did not have: res is gated against it and added to it, and its
// result and reports in dir written again with each phase against it.
func (e *Executor) againstHistory(res *engine.Result, dir string) error {
	stats, err := e.cfg.History.Stats(artifacts.HistoryName(res), res.Provider, res.Profile)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if e.cfg.Gate {
		artifacts.ApplyGate(res, stats)
	}
	if err := e.cfg.History.Add(res); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	var dumps []string
	entries, err := os.ReadDir(filepath.Join(dir, artifacts.DumpDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, d := range entries {
		dumps = append(dumps, artifacts.DumpDir+"/"+d.Name())
	}
	return writeFolder(dir, res, dumps, stats)
}

// lost is the result of an item whose pod ended without sending its run
// folder back: interrupted (no verdict was reached), saying how the pod
// ended.
func (e *Executor) lost(it *runs.Item, pod string, began time.Time, why error) *engine.Result {
	reason := fmt.Sprintf("pod %s of Job %s ended before it sent its run folder back", pod, e.name)
	if p, err := e.kube.CoreV1().Pods(e.cfg.Namespace).Get(context.Background(), pod, metav1.GetOptions{}); err == nil {
		reason += ": " + podEnd(p)
	} else if apierrors.IsNotFound(err) {
		reason += ": it was deleted"
	}
	if why != nil {
		reason += " (" + why.Error() + ")"
	}
	reason += "; its lab, in the pod, went with it"
	return runs.NotRun(it.Scenario, session.ProviderLab, engine.Interrupted, reason, began)
}

// writeLost writes the result of an item whose pod sent nothing back, and
// its reports, into its run folder.
func writeLost(dir string, res *engine.Result) error {
	return writeFolder(dir, res, nil, nil)
}

// writeFolder writes res's result.json and reports in run folder dir,
// linking dumps and showing each phase against stats (nil: none).
func writeFolder(dir string, res *engine.Result, dumps []string, stats map[string]artifacts.PhaseStats) error {
	run, err := artifacts.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(run.WriteResult(res), run.WriteReports(res, dumps, stats), run.Close())
}

// podEnd says how p's container ended, or its phase.
func podEnd(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf("its container ended with exit code %d (%s)", t.ExitCode, t.Reason)
		}
	}
	if p.DeletionTimestamp != nil {
		return "it is being deleted"
	}
	return "it is " + string(p.Status.Phase)
}

// deletePod deletes a pod of the Job, giving it its grace period.
func (e *Executor) deletePod(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.kube.CoreV1().Pods(e.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		e.cfg.Log.Error(err, "delete pod", "pod", name)
	}
}

// Close deletes the Job, its pods and its ConfigMap, and waits, within
// ctx, until no pod of it is left.
func (e *Executor) Close(ctx context.Context) error {
	if !e.submitted {
		return nil
	}
	ns := e.cfg.Namespace
	var errs []error
	err := e.kube.BatchV1().Jobs(ns).Delete(ctx, e.name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete Job %s: %w", e.name, err))
	}
	// The Job's pods go with it (background propagation); those that
	// the garbage collector has not reached yet are deleted here too.
	selector := LabelRun + "=" + e.name
	err = e.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
	if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete the pods of Job %s: %w", e.name, err))
	}
	if err := e.kube.CoreV1().ConfigMaps(ns).Delete(ctx, e.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete ConfigMap %s: %w", e.name, err))
	}
	var left int
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil //nolint:nilerr // the API server is retried until ctx ends
		}
		left = len(pods.Items)
		return left == 0, nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("%d pod(s) of Job %s still there in namespace %s on %s: %w", left, e.name, ns, e.cfg.Context, err))
	}
	return errors.Join(errs...)
}

// indexSelector selects the pods of index idx.
func (e *Executor) indexSelector(idx int) string {
	return batchv1.JobNameLabel + "=" + e.name + "," + batchv1.JobCompletionIndexAnnotation + "=" + strconv.Itoa(idx)
}
