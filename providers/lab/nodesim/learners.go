package nodesim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/version"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// etcdJoin is kubeadm join's etcd-join phase on a control plane that
// joins an existing etcd cluster. kubelet-start comes first; before
// Kubernetes 1.31 the kubelet registers the Node through the
// control-plane endpoint while the member is still a learner that has not
// started (bootstrapsThroughEndpoint): the window of cluster-api #14197,
// where KCP before v1.13.7 and v1.14.2 removes the unnamed member and the
// join fails. From 1.31 the Node waits for the local etcd.
type etcdJoin struct {
	id      uint64
	addedAt time.Time
	// startedAt is when its etcd pod started; zero before.
	startedAt time.Time
	// failed: the learner was removed before it started. etcd exits at
	// start ("the member has been permanently removed from the
	// cluster") and kubeadm join fails; nothing retries it.
	failed bool
}

// localModeFrom is the first Kubernetes version whose control planes KCP
// joins with kubeadm's ControlPlaneKubeletLocalMode
// (controlplane/kubeadm/internal/desiredstate, v1.13.6: 1.31.0; GA and
// always on from 1.36). kubeadm then writes the joining kubelet's
// bootstrap kubeconfig for the node's own API server
// (cmd/kubeadm/app/cmd/phases/join/kubelet.go), so its Node registers
// only once the local etcd member and API server run; before, it
// bootstraps through the control-plane endpoint, during etcd-join.
var localModeFrom = version.MajorMinor(1, 31)

// bootstrapsThroughEndpoint tells whether a joining control plane's
// kubelet of the cluster of key registers its Node through the
// control-plane endpoint: Kubernetes before localModeFrom.
func (s *Sim) bootstrapsThroughEndpoint(key string) bool {
	v, err := version.ParseGeneric(s.spec(key).Version())
	return err == nil && v.LessThan(localModeFrom)
}

// SetMemberStartDelay has the etcd members that join the cluster of key
// start d after kubeadm adds them as learners (zero: at once, as a
// healthy node starts its etcd static pod).
func (s *Sim) SetMemberStartDelay(key string, d time.Duration) error {
	if _, ok := s.clusters.Get(key); !ok {
		return fmt.Errorf("no simulated cluster %s in the lab: %w", key, providers.ErrNotFound)
	}
	s.faults.setMemberStart(key, d)
	return nil
}

// joinAsLearner plays kubeadm's etcd-join on vm, a control plane whose
// static pods have not started. It reports held while the member may not
// start yet: kubeadm has added it as a learner and its etcd pod has not
// started (after f's delay), or it never will (the learner was removed).
// A control plane that inits the cluster, or one whose member exists (a
// reboot), joins nothing.
func (s *Sim) joinAsLearner(ctx context.Context, c inmemoryclient.Client, w *workloadapi.Server, vm *simVM, f faultsNow, now time.Time) (bool, error) {
	if vm.join == nil {
		joining, err := joinsEtcd(ctx, c, vm.name)
		if err != nil || !joining {
			return false, err
		}
		vm.join = &etcdJoin{id: newMemberID(), addedAt: now}
		w.AddLearner(vm.join.id, "https://"+vm.name+":2380")
		s.log.V(1).Info("kubeadm join: etcd member added as a learner", "node", vm.name, "member", strconv.FormatUint(vm.join.id, 16))
	}
	j := vm.join
	switch {
	case j.failed:
		return true, nil
	case !j.startedAt.IsZero():
		return false, nil
	case now.Before(j.addedAt.Add(f.memberStart[vm.cluster])):
		return true, nil
	case w.LearnerRemoved(j.id):
		j.failed = true
		w.PromoteLearner(j.id) // forgotten: etcd has no such member
		s.log.Info("kubeadm join failed: the etcd learner was removed before its member started, and etcd exits (the member has been permanently removed from the cluster)",
			"node", vm.name, "member", strconv.FormatUint(j.id, 16))
		return true, nil
	}
	j.startedAt = now
	w.StartLearner(j.id)
	return false, nil
}

// promoteLearner plays kubeadm's MemberPromote once the started learner
// has caught up (the profile's LearnerCatchUp).
func (s *Sim) promoteLearner(w *workloadapi.Server, vm *simVM, now time.Time) {
	j := vm.join
	if j == nil || j.startedAt.IsZero() || now.Before(j.startedAt.Add(s.profile.LearnerCatchUp)) {
		return
	}
	w.PromoteLearner(j.id)
	vm.join = nil
}

// joinsEtcd tells whether node would join an existing etcd cluster: it
// runs no member of its own, and another does.
func joinsEtcd(ctx context.Context, c inmemoryclient.Client, node string) (bool, error) {
	err := c.Get(ctx, client.ObjectKeyFromObject(staticPod("etcd", node)), &corev1.Pod{})
	if err == nil || !apierrors.IsNotFound(err) {
		return false, err
	}
	members, err := etcdPods(ctx, c)
	return len(members) > 0, err
}

// newMemberID is a member ID as etcd gives them, never zero.
func newMemberID() uint64 { return uint64(rand.Uint32() | 1) }

// memberID is the member ID of an etcd pod.
func memberID(p corev1.Pod) uint64 {
	id, _ := strconv.ParseUint(p.Annotations[cloudv1.EtcdMemberIDAnnotationName], 10, 64)
	return id
}

// voters are the members that vote: learners neither count towards
// quorum nor lead.
func voters(w *workloadapi.Server, pods []corev1.Pod) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if !w.IsLearner(memberID(p)) {
			out = append(out, p)
		}
	}
	return out
}
