package nodesim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"net"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The DaemonSet controller's identity and retry pace.
const (
	daemonSetController = "system:serviceaccount:kube-system:daemon-set-controller"
	cniRetryFirst       = time.Second
	cniRetryMax         = 10 * time.Second
)

// cniState is the simulator's view of one node's CNI agent pod.
type cniState struct {
	up       bool // admitted and running
	inFlight bool
	nextTry  time.Time
	backoff  time.Duration
}

// cniAgents are the nodes' CNI agents. Their pods are created in the
// background (a webhook may take its whole timeout to answer), so they
// have a lock of their own, never held across an API call.
type cniAgents struct {
	mu sync.Mutex
	m  map[string]*cniState
}

// up tells whether the node's agent pod runs.
func (a *cniAgents) up(node string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[node]
	return st != nil && st.up
}

// start tells whether to try creating the node's agent pod now, and if so
// marks the attempt in flight.
func (a *cniAgents) start(node string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[node]
	if st == nil {
		st = &cniState{backoff: cniRetryFirst}
		a.m[node] = st
	}
	if st.up || st.inFlight || now.Before(st.nextTry) {
		return false
	}
	st.inFlight = true
	return true
}

// done records an attempt's outcome: up, or a retry after a backoff.
func (a *cniAgents) done(node string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[node]
	st.inFlight = false
	if err == nil {
		st.up = true
		return
	}
	st.nextTry = time.Now().Add(st.backoff)
	st.backoff = min(2*st.backoff, cniRetryMax)
}

// forget drops a destroyed node's agent, unless an attempt is in flight.
func (a *cniAgents) forget(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.m[node]; st != nil && !st.inFlight {
		delete(a.m, node)
	}
}

// cniDown tells whether a node's kubelet reports its network not ready:
// the CNI was broken on purpose, or its agent pod is not running yet.
func (s *Sim) cniDown(node string, f faultsNow) bool {
	return f.cniBroken[node] || !s.cni.up(node)
}

// reconcileCNI plays the DaemonSet controller for a node whose kubelet
// runs: it asks for the CNI agent pod until admission lets it through, in
// the background, because a webhook may take its whole timeout to answer.
func (s *Sim) reconcileCNI(ctx context.Context, vm *simVM, now time.Time) {
	if !s.cni.start(vm.name, now) {
		return
	}
	go func() {
		err := s.createCNIPod(ctx, vm.cluster, vm.name)
		s.cni.done(vm.name, err)
		if err != nil {
			s.log.V(1).Info("CNI pod not created", "node", vm.name, "error", err.Error())
		}
	}()
}

// createCNIPod admits and creates the node's CNI agent pod; a refusal is
// recorded as the DaemonSet controller records it, a FailedCreate Event.
func (s *Sim) createCNIPod(ctx context.Context, cluster, node string) error {
	w := s.workload(cluster)
	if w == nil {
		return fmt.Errorf("cluster %s: %w", cluster, errClusterRemoved)
	}
	c := w.Client()
	ds := labconfig.CNIAgents[s.cniOf(cluster)]
	pod := cniPod(ds.Name, ds.Image, node)
	if err := workloadapi.GetInto(ctx, c, client.ObjectKeyFromObject(pod), &corev1.Pod{}); err == nil {
		return nil // created before a restart of the simulator's view
	}
	a, err := s.admitterFor(ctx, cluster)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, 35*time.Second) // longer than any webhook timeout (30s max)
	defer cancel()
	if err := a.Admit(actx, pod, daemonSetController); err != nil {
		return s.recordFailedCreate(ctx, c, ds.Name, "Error creating: "+err.Error())
	}
	return createIfMissing(ctx, c, pod)
}

func cniPod(ds, image, node string) *corev1.Pod {
	sum := sha256.Sum256([]byte(node))
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem, Name: ds + "-" + hex.EncodeToString(sum[:])[:5],
			Labels:          map[string]string{"k8s-app": ds},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds, Controller: &yes, UID: "lab"}},
		},
		Spec: corev1.PodSpec{
			NodeName: node, HostNetwork: true, PriorityClassName: "system-node-critical",
			Containers:  []corev1.Container{{Name: ds, Image: image}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

// recordFailedCreate records (or counts again) the DaemonSet controller's
// Event, and returns the refusal as the attempt's error.
func (s *Sim) recordFailedCreate(ctx context.Context, c inmemoryclient.Client, ds, msg string) error {
	sum := sha256.Sum256([]byte(msg))
	name := ds + "." + hex.EncodeToString(sum[:])[:16]
	now := metav1.Now()
	ev := &corev1.Event{}
	err := workloadapi.GetInto(ctx, c, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: name}, ev)
	switch {
	case apierrors.IsNotFound(err):
		ev = &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name},
			InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: metav1.NamespaceSystem, Name: ds},
			Reason:         "FailedCreate", Message: msg, Type: corev1.EventTypeWarning,
			Source: corev1.EventSource{Component: "daemonset-controller"}, Count: 1,
			FirstTimestamp: now, LastTimestamp: now,
		}
		err = c.Create(ctx, ev)
	case err == nil:
		ev.Count++
		ev.LastTimestamp = now
		err = c.Update(ctx, ev)
	}
	if err != nil {
		return fmt.Errorf("%s (and recording the Event: %w)", msg, err)
	}
	return fmt.Errorf("%s", msg)
}

// admitters are the clusters' admitters, made on first use; the workload
// API servers ask for them from their own goroutines.
type admitters struct {
	mu sync.Mutex
	m  map[string]*workloadapi.Admitter
	// runCtx is the simulator's run: admitters live as long as it.
	runCtx context.Context
}

func (a *admitters) setRunContext(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.runCtx = ctx
}

func (a *admitters) get(cluster string) (*workloadapi.Admitter, context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[cluster], a.runCtx
}

// keepOnly stops and drops the admitters of clusters not in clusters
// (removed ones).
func (a *admitters) keepOnly(clusters map[string]labCluster) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for cluster, ad := range a.m {
		if _, ok := clusters[cluster]; !ok {
			ad.Stop()
			delete(a.m, cluster)
		}
	}
}

// add keeps made unless another caller made one first, and returns the
// one kept.
func (a *admitters) add(cluster string, made *workloadapi.Admitter) *workloadapi.Admitter {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m[cluster] == nil {
		a.m[cluster] = made
	}
	return a.m[cluster]
}

// admitterFor returns the cluster's admitter, made on first use from the
// kubeconfig Cluster API keeps for it.
func (s *Sim) admitterFor(ctx context.Context, cluster string) (*workloadapi.Admitter, error) {
	a, runCtx := s.admitters.get(cluster)
	if a != nil {
		return a, nil
	}
	w := s.workload(cluster)
	if w == nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster, errClusterRemoved)
	}
	sec, err := secret.GetFromNamespacedName(ctx, s.mc, labconfig.ObjectKey(cluster), secret.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of cluster %s: %w", cluster, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data[secret.KubeconfigDataName])
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of cluster %s: %w", cluster, err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	a, err = workloadapi.NewAdmitter(runCtx, workloadapi.AdmitterInput{
		Config: cfg, Store: w.Client(), Scheme: scheme, Refused: s.refused,
		Routed: func(ctx context.Context, node string) (bool, error) { return nodeHasBlock(ctx, w.Client(), node) },
	})
	if err != nil {
		return nil, err
	}
	kept := s.admitters.add(cluster, a)
	if kept != a {
		a.Stop()
	}
	return kept, nil
}

// ensureCNIDaemonSet creates the cluster's CNI DaemonSet, the object the
// refusals are recorded against.
func (s *Sim) ensureCNIDaemonSet(ctx context.Context, c inmemoryclient.Client, cluster string) error {
	ds := labconfig.CNIAgents[s.cniOf(cluster)]
	return createIfMissing(ctx, c, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: ds.Name, Namespace: metav1.NamespaceSystem, Labels: map[string]string{"k8s-app": ds.Name}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": ds.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"k8s-app": ds.Name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: ds.Name, Image: ds.Image}}},
			},
		},
	})
}

func (s *Sim) cniOf(cluster string) string { return s.spec(cluster).CNIName() }

// closedPort returns a loopback address nothing listens on: the port was
// bound and released.
func closedPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("pick a closed loopback port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}
