package nodesim

import (
	"context"
	"crypto"
	"crypto/x509"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"math/rand/v2"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
)

// staticPodRunning tells whether a static pod of a control-plane node runs.
func (s *Sim) staticPodRunning(node, component string, now time.Time) bool {
	v, ok := s.views.Get(node)
	return ok && v.controlPlane && v.podsStarted(now) && !s.faults.podStopped(node, component)
}

// setLeaderStuck makes a control-plane node's etcd member a stuck leader,
// or has it hand leadership to another member.
func (s *Sim) setLeaderStuck(node string, stuck bool) error {
	v, ok := s.views.Get(node)
	if !ok {
		return s.faults.setLeaderStuck(node, nil, stuck)
	}
	return s.faults.setLeaderStuck(node, &v, stuck)
}

// reconcileStaticPods runs or stops a control plane's etcd member and API
// server with its VM and with the static pods stopped on it; kubeadm's init
// or join happens on first boot.
func (s *Sim) reconcileStaticPods(ctx context.Context, c inmemoryclient.Client, w *workloadapi.Server, vm *simVM, f faultsNow, now time.Time) error {
	etcdPod, apiPod := "etcd-"+vm.name, "kube-apiserver-"+vm.name
	if !podsStarted(vm, now) {
		if vm.podsUp {
			w.RemoveAPIServer(apiPod)
			w.RemoveEtcdMember(etcdPod)
			vm.podsUp = false
		}
		return nil
	}
	s.promoteLearner(w, vm, now)
	stopped := f.podsStopped[vm.name]
	changed := f.podsGen[vm.name] != s.podsWritten[vm.name]
	wantEtcd, wantAPI := !stopped["etcd"], !stopped["kube-apiserver"]
	if vm.podsUp && w.HasAPIServer(apiPod) == wantAPI && w.HasEtcdMember(etcdPod) == wantEtcd && !changed {
		return nil
	}
	if !vm.podsUp {
		if refused, err := s.joinRefused(ctx, c, vm, f); refused || err != nil {
			return err
		}
		if held, err := s.joinAsLearner(ctx, c, w, vm, f, now); held || err != nil {
			return err
		}
		if err := s.ensureEtcdPod(ctx, c, vm); err != nil {
			return err
		}
		for _, component := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
			if err := createIfMissing(ctx, c, staticPod(component, vm.name)); err != nil {
				return err
			}
		}
		if err := s.ensureAddons(ctx, c, vm.cluster); err != nil {
			return err
		}
	}
	if !wantEtcd {
		w.RemoveEtcdMember(etcdPod)
	} else if !w.HasEtcdMember(etcdPod) {
		etcdCA, etcdKey, err := s.clusterCA(ctx, vm.cluster, secret.EtcdCA)
		if err != nil {
			return err
		}
		if err := w.AddEtcdMember(etcdPod, etcdCA, etcdKey); err != nil {
			return err
		}
	}
	if !wantAPI {
		w.RemoveAPIServer(apiPod)
	} else if !w.HasAPIServer(apiPod) {
		ca, caKey, err := s.clusterCA(ctx, vm.cluster, secret.ClusterCA)
		if err != nil {
			return err
		}
		if err := w.AddAPIServer(apiPod, ca, caKey); err != nil {
			return err
		}
	}
	vm.podsUp = true
	s.promoteLearner(w, vm, now) // a learner that catches up at once
	// The kubelet reports its static pods through its own API server
	// (localAPIUp): while that is gone, the mirror pods keep what they said.
	if changed && localAPIUp(vm, f) {
		if err := s.writePodStatus(ctx, c, vm.name, stopped); err != nil {
			return err
		}
		s.podsWritten[vm.name] = f.podsGen[vm.name]
	}
	return nil
}

// writePodStatus is what the kubelet reports of a node's static pods: a
// stopped one is not Ready.
func (s *Sim) writePodStatus(ctx context.Context, c inmemoryclient.Client, node string, stopped map[string]bool) error {
	for _, component := range providers.StaticPodComponents {
		pod := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: component + "-" + node}, pod); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("get static pod %s-%s: %w", component, node, err)
		}
		want := corev1.ConditionTrue
		if stopped[component] {
			want = corev1.ConditionFalse
		}
		if len(pod.Status.Conditions) == 1 && pod.Status.Conditions[0].Status == want {
			continue
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: want, LastTransitionTime: metav1.Now()}}
		if want == corev1.ConditionFalse {
			pod.Status.Conditions[0].Reason = "ContainersNotReady"
		}
		if err := c.Update(ctx, pod); err != nil {
			return fmt.Errorf("update static pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// ensureEtcdPod creates the member's pod, annotated as the in-memory etcd
// expects: cluster ID, member ID (the learner's, on a join), and
// leadership for the first member.
func (s *Sim) ensureEtcdPod(ctx context.Context, c inmemoryclient.Client, vm *simVM) error {
	pod := staticPod("etcd", vm.name)
	err := c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	members, err := etcdPods(ctx, c)
	if err != nil {
		return err
	}
	clusterID, leader := "", false
	for _, p := range members {
		clusterID = p.Annotations[cloudv1.EtcdClusterIDAnnotationName]
		_, isLeader := p.Annotations[cloudv1.EtcdLeaderFromAnnotationName]
		leader = leader || isLeader
	}
	if clusterID == "" {
		clusterID = strconv.FormatUint(uint64(rand.Uint32()|1), 10)
	}
	id := newMemberID()
	if vm.join != nil {
		id = vm.join.id
	}
	pod.Annotations = map[string]string{
		cloudv1.EtcdClusterIDAnnotationName: clusterID,
		cloudv1.EtcdMemberIDAnnotationName:  strconv.FormatUint(id, 10),
	}
	if !leader {
		pod.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = time.Now().Format(time.RFC3339)
	}
	return createIfMissing(ctx, c, pod)
}

// joinRefused plays kubeadm join on a new control plane while the etcd
// leader is stuck: adding the member never commits, so the node never
// registers and its Machine stays Provisioned (seed 003). A node whose
// member exists is rebooting, not joining.
func (s *Sim) joinRefused(ctx context.Context, c inmemoryclient.Client, vm *simVM, f faultsNow) (bool, error) {
	stuck := f.stuckLeader[vm.cluster]
	if stuck == "" || stuck == vm.name {
		return false, nil
	}
	err := c.Get(ctx, client.ObjectKeyFromObject(staticPod("etcd", vm.name)), &corev1.Pod{})
	if err == nil || !apierrors.IsNotFound(err) {
		return false, err
	}
	if !vm.joinRefused {
		vm.joinRefused = true
		s.log.Info("kubeadm join: adding the etcd member timed out; the leader cannot reach its peers", "node", vm.name, "leader", "etcd-"+stuck)
	}
	return true, nil
}

// electLeader plays etcd's election: when the leader's member is down and
// a quorum of members is still up, one of them becomes leader. Without it
// KCP never removes a dead leader's Machine.
func (s *Sim) electLeader(ctx context.Context, cluster string, f faultsNow) error {
	w := s.workload(cluster)
	if w == nil {
		return nil // removed (Renew) since the tick read the clusters
	}
	c := w.Client()
	pods, err := etcdPods(ctx, c)
	if err != nil || len(pods) == 0 {
		return err
	}
	pods = voters(w, pods)
	var live []corev1.Pod
	leaderUp := false
	var leaderFrom time.Time
	leaderName := ""
	for _, p := range pods {
		if t, err := time.Parse(time.RFC3339, p.Annotations[cloudv1.EtcdLeaderFromAnnotationName]); err == nil && !t.Before(leaderFrom) {
			leaderFrom, leaderName = t, p.Name
		}
	}
	for _, p := range pods {
		if w.HasEtcdMember(p.Name) {
			live = append(live, p)
			leaderUp = leaderUp || p.Name == leaderName
		}
	}
	w.SetQuorum(len(live)*2 > len(pods))
	// A stuck leader keeps leadership while it runs; moving leadership
	// away hands it to the first other live member.
	take := ""
	if stuck := "etcd-" + f.stuckLeader[cluster]; stuck != leaderName && w.HasEtcdMember(stuck) {
		take = stuck
	}
	if from := s.faults.takeMoveLeader(cluster); from != "" {
		for _, p := range live {
			if leaderName == "etcd-"+from && p.Name != leaderName {
				take = p.Name
				break
			}
		}
	}
	if take != "" {
		for _, p := range live {
			if p.Name == take {
				return s.makeLeader(ctx, c, p, leaderFrom, leaderName, cluster)
			}
		}
	}
	if leaderUp || len(live)*2 <= len(pods) || len(live) == 0 {
		return nil // a leader serves, or no quorum elects one
	}
	return s.makeLeader(ctx, c, live[0], leaderFrom, leaderName, cluster)
}

// makeLeader makes next the leader after previous, who led since from.
func (s *Sim) makeLeader(ctx context.Context, c inmemoryclient.Client, next corev1.Pod, from time.Time, previous, cluster string) error {
	// RFC3339 has second resolution: the new leader's time must sort after
	// the old one's.
	at := time.Now()
	if !at.After(from) {
		at = from.Add(time.Second)
	}
	next.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = at.Format(time.RFC3339)
	s.log.V(1).Info("etcd leader elected", "cluster", cluster, "member", next.Name, "previous", previous)
	return c.Update(ctx, &next)
}

// forget removes what was left of a destroyed VM whose Node is gone: its
// CNI agent pod, its static pods and its endpoints.
func (s *Sim) forget(ctx context.Context, c inmemoryclient.Client, w *workloadapi.Server, vm *simVM) {
	s.cni.forget(vm.name)
	ds := labconfig.CNIAgents[s.cniOf(vm.cluster)]
	if err := c.Delete(ctx, cniPod(ds.Name, ds.Image, vm.name)); err != nil && !apierrors.IsNotFound(err) {
		s.log.V(1).Info("delete CNI pod", "node", vm.name, "error", err.Error())
	}
	if !vm.controlPlane {
		return
	}
	w.RemoveAPIServer("kube-apiserver-" + vm.name)
	w.RemoveEtcdMember("etcd-" + vm.name)
	for _, component := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if err := c.Delete(ctx, staticPod(component, vm.name)); err != nil && !apierrors.IsNotFound(err) {
			s.log.V(1).Info("delete static pod", "pod", component+"-"+vm.name, "error", err.Error())
		}
	}
}

func (s *Sim) clusterCA(ctx context.Context, cluster string, purpose secret.Purpose) (*x509.Certificate, crypto.Signer, error) {
	sec, err := secret.GetFromNamespacedName(ctx, s.mc, labconfig.ObjectKey(cluster), purpose)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s of cluster %s (KCP creates it): %w", purpose, cluster, err)
	}
	cert, err := certs.DecodeCertPEM(sec.Data[secret.TLSCrtDataName])
	if err != nil || cert == nil {
		return nil, nil, fmt.Errorf("decode %s certificate of cluster %s: %v", purpose, cluster, err)
	}
	key, err := certs.DecodePrivateKeyPEM(sec.Data[secret.TLSKeyDataName])
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s key of cluster %s: %w", purpose, cluster, err)
	}
	return cert, key, nil
}

// ensureAddons creates, once per cluster, what kubeadm init leaves behind
// and KCP reads: the system namespaces, the kubeadm-config ConfigMap, RBAC,
// kube-proxy and CoreDNS.
func (s *Sim) ensureAddons(ctx context.Context, c inmemoryclient.Client, cluster string) error {
	if s.addons[cluster] {
		return nil
	}
	ks := metav1.NamespaceSystem
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceDefault}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ks}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespacePublic}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeadm:get-nodes"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:bootstrappers:kubeadm:default-node-token"}},
		},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config", Namespace: ks}, Data: map[string]string{"ClusterConfiguration": ""}},
		&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: ks, Labels: map[string]string{"component": "kube-proxy"}},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:" + s.spec(cluster).Version()}},
			}}},
		},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ks}, Data: map[string]string{"Corefile": "ANG"}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ks},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.12.1"}},
			}}},
		},
	}
	for _, o := range objs {
		if err := createIfMissing(ctx, c, o); err != nil {
			return err
		}
	}
	if err := s.ensureCNIDaemonSet(ctx, c, cluster); err != nil {
		return err
	}
	if s.cniOf(cluster) == labconfig.CNICalico {
		if err := s.ensureCalicoPool(ctx, c, cluster); err != nil {
			return err
		}
	}
	s.addons[cluster] = true
	return nil
}

func staticPod(component, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem, Name: component + "-" + node,
			Labels: map[string]string{"component": component, "tier": "control-plane"},
		},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

func etcdPods(ctx context.Context, c inmemoryclient.Client) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{"component": "etcd", "tier": "control-plane"}); err != nil {
		return nil, fmt.Errorf("list etcd pods: %w", err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if _, removed := p.Annotations[cloudv1.EtcdMemberRemoved]; !removed {
			out = append(out, p)
		}
	}
	return out, nil
}

func createIfMissing(ctx context.Context, c inmemoryclient.Client, o client.Object) error {
	if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
	}
	return nil
}
