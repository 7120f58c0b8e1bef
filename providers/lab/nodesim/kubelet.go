package nodesim

import (
	"context"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The messages a real kubelet and node lifecycle controller write, as the
// seeds quote them.
const (
	msgKubeletReady   = "kubelet is posting ready status"
	msgNodeUnknown    = "Kubelet stopped posting node status."
	msgCNINotReady    = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
	reasonNodeUnknown = "NodeStatusUnknown"
)

// reconcileVM moves one Node towards what its VM's state implies. It
// reports gone once the VM and its Node no longer exist.
func (s *Sim) reconcileVM(ctx context.Context, vm *simVM, f faultsNow, now time.Time) (bool, error) {
	w := s.workload(vm.cluster)
	if w == nil {
		return false, nil
	}
	c := w.Client()
	if vm.controlPlane {
		if err := s.reconcileStaticPods(ctx, c, w, vm, f, now); err != nil {
			return false, err
		}
	}
	node, err := getNode(ctx, c, vm.name)
	if err != nil {
		return false, err
	}
	if kubeletUp(vm, f, now) {
		vm.booted = true
		if vm.podsUp && !localAPIUp(vm, f) {
			// The kubelet posts nothing: its only API server is gone, and
			// the node lifecycle controller acts on the silence.
			if !w.CanStore() {
				return false, nil
			}
			return s.nodeSilent(ctx, c, node, vm, now)
		}
		vm.beatAt = now
		if vm.controlPlane && !vm.podsUp && (vm.join == nil || !s.bootstrapsThroughEndpoint(vm.cluster)) {
			// kubeadm init first, or join's etcd member: the kubelet
			// bootstraps through its own API server (local mode). Before
			// Kubernetes 1.31 a joining kubelet registers through the
			// control-plane endpoint while its learner has not started.
			return false, nil
		}
		if !w.CanStore() {
			return false, nil // no API server can store the kubelet's status
		}
		if node == nil {
			cidr, err := s.allocatePodCIDR(ctx, c, vm.cluster)
			if err != nil {
				return false, err
			}
			s.joined++
			if err := createNode(ctx, c, vm, cidr, s.cniDown(vm.name, f), s.joined, now); err != nil || cidr != "" {
				return false, err
			}
			return false, recordCIDRNotAvailable(ctx, c, vm.name)
		}
		s.reconcileCNI(ctx, vm, now)
		return false, s.setReady(ctx, c, node, vm, f, now)
	}
	if node == nil {
		if !vm.destroyedAt.IsZero() {
			s.forget(ctx, c, w, vm)
			return true, nil
		}
		return false, nil
	}
	if !w.CanStore() {
		return false, nil // nor the node lifecycle controllers' verdicts
	}
	if !vm.destroyedAt.IsZero() && now.Sub(vm.destroyedAt) >= s.profile.NodeDelete+s.profile.NodeGrace {
		// The cloud provider's node lifecycle controller deletes Nodes
		// whose instance is gone.
		if err := c.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete node %s: %w", vm.name, err)
		}
		return false, nil
	}
	if at, ok := f.kubeletStopped[vm.name]; ok && podsStarted(vm, now) && at.After(vm.beatAt) {
		// The kubelet ran until it was stopped, whenever the last tick
		// was (a busy machine spaces them): its silence counts from then.
		vm.beatAt = at
	}
	return s.nodeSilent(ctx, c, node, vm, now)
}

// nodeSilent is the node lifecycle controller's verdict on a Node whose
// kubelet has not posted since vm.beatAt: Unknown after the grace period.
func (s *Sim) nodeSilent(ctx context.Context, c inmemoryclient.Client, node *corev1.Node, vm *simVM, now time.Time) (bool, error) {
	if node == nil {
		return false, nil
	}
	if vm.beatAt.IsZero() {
		vm.beatAt = now
	}
	if now.Sub(vm.beatAt) >= s.profile.NodeGrace {
		return false, s.setUnknown(ctx, c, node, now)
	}
	return false, nil
}

// localAPIUp tells whether the kubelet can reach an API server. A control
// plane's kubelet talks to its own kube-apiserver only, which talks to its
// own etcd member only: KCP turns on kubeadm's ControlPlaneKubeletLocalMode
// from Kubernetes 1.31 (its kubelet.conf names the node's address, not the
// control-plane endpoint; seen on the real-node tier). A worker's goes
// through the endpoint.
func localAPIUp(vm *simVM, f faultsNow) bool {
	if !vm.controlPlane {
		return true
	}
	stopped := f.podsStopped[vm.name]
	return !stopped["kube-apiserver"] && !stopped["etcd"]
}

// kubeletUp tells whether the VM's kubelet runs now.
func kubeletUp(vm *simVM, f faultsNow, now time.Time) bool {
	_, stopped := f.kubeletStopped[vm.name]
	return vm.on && podsStarted(vm, now) && !stopped
}

// podsStarted tells whether the VM has booted far enough to run its
// kubelet and, on a control plane, its static pods.
func podsStarted(vm *simVM, now time.Time) bool {
	return vm.on && !now.Before(vm.upAt)
}

// getNode reads a Node, or nil if there is none.
func getNode(ctx context.Context, c inmemoryclient.Client, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := workloadapi.GetInto(ctx, c, client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get node %s: %w", name, err)
	}
	return n, nil
}

// createNode registers the Node, with the pod CIDR kube-controller-manager
// gives it ("" when it has none left).
func createNode(ctx context.Context, c inmemoryclient.Client, vm *simVM, podCIDR string, cniBroken bool, joined int, now time.Time) error {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: vm.name, Labels: map[string]string{corev1.LabelHostname: vm.name, corev1.LabelOSStable: "linux"},
			Annotations: map[string]string{annJoinOrder: strconv.Itoa(joined)}},
		Spec: corev1.NodeSpec{ProviderID: "vsphere://" + vm.uuid},
		Status: corev1.NodeStatus{
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: vm.kubeletVersion(), OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
	if vm.controlPlane {
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
		n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	}
	t := metav1.NewTime(now)
	n.Status.Conditions = []corev1.NodeCondition{
		readyCondition(cniBroken, t),
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: t, LastTransitionTime: t},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: t, LastTransitionTime: t},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: t, LastTransitionTime: t},
	}
	if cniBroken {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	}
	if podCIDR != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR, []string{podCIDR}
	}
	return createIfMissing(ctx, c, n)
}

// kubeletVersion is the version the Node reports, as kubectl get nodes
// shows it and KCP reads it (v1.14's status.versions counts Machines by
// their Node's kubelet version: one that reported the lab's default
// version mid-rollout hid the rollout from the MachineSets' preflight
// checks).
func (vm *simVM) kubeletVersion() string {
	if vm.version == "" {
		return labconfig.KubernetesVersion
	}
	return vm.version
}

// annJoinOrder numbers Nodes in the order they registered. Calico's IPAM
// claims blocks in that order and the lab's scheduler puts a webhook pod
// on the last one: creation timestamps have second resolution, and nodes
// that join in the same second would otherwise tie differently for each.
const annJoinOrder = "lab.faultline.dev/join-order"

// joinedBefore orders Nodes by annJoinOrder, then by name.
func joinedBefore(a, b *corev1.Node) bool {
	x, _ := strconv.Atoi(a.Annotations[annJoinOrder])
	y, _ := strconv.Atoi(b.Annotations[annJoinOrder])
	if x != y {
		return x < y
	}
	return a.Name < b.Name
}

// readyCondition is what a running kubelet reports: Ready, or, without a
// CNI, Ready=False with seed 000's message.
func readyCondition(cniBroken bool, t metav1.Time) corev1.NodeCondition {
	if cniBroken {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: msgCNINotReady, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: msgKubeletReady, LastHeartbeatTime: t, LastTransitionTime: t}
}

// setReady writes what a running kubelet reports when it differs, and at
// least every profile heartbeat with each condition's lastHeartbeatTime
// renewed, as the real-node tier's kubelets post node status
// (nodeStatusReportFrequency): a change of a Node's conditions is what
// makes a MachineHealthCheck look at its Machines again, and one whose
// remediation is short-circuited waits for nothing else (Cluster API
// v1.13 does not requeue it), so a healthy Node's heartbeat is what lets
// it count an unhealthy one once its timeout has passed.
func (s *Sim) setReady(ctx context.Context, c inmemoryclient.Client, n *corev1.Node, vm *simVM, f faultsNow, now time.Time) error {
	cniDown := s.cniDown(vm.name, f)
	want := readyCondition(cniDown, metav1.NewTime(now))
	changed := heartbeatDue(n, s.profile.Heartbeat, now)
	if changed {
		for i := range n.Status.Conditions {
			n.Status.Conditions[i].LastHeartbeatTime = want.LastHeartbeatTime
		}
	}
	for i := range n.Status.Conditions {
		cond := &n.Status.Conditions[i]
		if cond.Type == corev1.NodeReady {
			if cond.Status != want.Status || cond.Message != want.Message {
				*cond = want
				changed = true
			}
			continue
		}
		if cond.Status == corev1.ConditionUnknown {
			cond.Status, cond.LastTransitionTime, cond.LastHeartbeatTime = corev1.ConditionFalse, want.LastTransitionTime, want.LastHeartbeatTime
			cond.Message = ""
			changed = true
		}
	}
	taints := withoutTaints(n.Spec.Taints, corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady)
	if cniDown {
		taints = append(taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	}
	if len(taints) != len(n.Spec.Taints) {
		changed = true
	}
	n.Spec.Taints = taints
	if !changed {
		return nil
	}
	return updateNode(ctx, c, n)
}

// heartbeatDue tells whether a running kubelet posts n's status again: its
// Ready condition's last heartbeat is a heartbeat old.
func heartbeatDue(n *corev1.Node, heartbeat time.Duration, now time.Time) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return now.Sub(cond.LastHeartbeatTime.Time) >= heartbeat
		}
	}
	return false
}

// setUnknown is the node lifecycle controller's verdict on a Node whose
// kubelet went silent for longer than the grace period.
func (s *Sim) setUnknown(ctx context.Context, c inmemoryclient.Client, n *corev1.Node, now time.Time) error {
	changed := false
	t := metav1.NewTime(now)
	for i := range n.Status.Conditions {
		cond := &n.Status.Conditions[i]
		if cond.Status != corev1.ConditionUnknown {
			cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime = corev1.ConditionUnknown, reasonNodeUnknown, msgNodeUnknown, t
			changed = true
		}
	}
	if !changed {
		return nil
	}
	n.Spec.Taints = append(withoutTaints(n.Spec.Taints, corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady),
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &t},
	)
	return updateNode(ctx, c, n)
}

// updateNode writes a Node read this tick; a conflict (Cluster API patched
// it meanwhile) is retried on the next tick, and reported at V(1) like any
// tick error.
func updateNode(ctx context.Context, c inmemoryclient.Client, n *corev1.Node) error {
	if err := c.Update(ctx, n); err != nil {
		return fmt.Errorf("update node %s: %w", n.Name, err)
	}
	return nil
}

func withoutTaints(in []corev1.Taint, keys ...string) []corev1.Taint {
	var out []corev1.Taint
next:
	for _, t := range in {
		for _, k := range keys {
			if t.Key == k {
				continue next
			}
		}
		out = append(out, t)
	}
	return out
}
