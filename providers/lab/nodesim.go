package lab

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// The messages a real kubelet and node lifecycle controller write, as the
// seeds quote them.
const (
	msgKubeletReady   = "kubelet is posting ready status"
	msgNodeUnknown    = "Kubelet stopped posting node status."
	msgCNINotReady    = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
	reasonNodeUnknown = "NodeStatusUnknown"
)

// nodeSim plays kubelet, kubeadm and the node lifecycle controller for every
// VM that backs a Machine; nothing upstream ties a vcsim VM to its Node. It
// reads the VMs' power state through the vSphere API, so a fault injected
// there (power off, destroy) reaches the workload cluster the way it would
// on a real one.
type nodeSim struct {
	vc        *vim25.Client
	setIP     func(types.ManagedObjectReference, string) error
	mc        client.Client
	mem       inmemoryruntime.Manager
	workloads map[string]*workloadServer // by cluster name
	profile   Profile
	log       logr.Logger

	view *view.ContainerView

	mu             sync.Mutex
	vms            map[string]*simVM // by VM (and Node) name
	kubeletStopped map[string]bool
	// podsStopped: the static pods stopped on a node, by component;
	// podsChanged: nodes whose static pods' status is to be written.
	podsStopped map[string]map[string]bool
	podsChanged map[string]bool
	cniBroken   map[string]bool
	addons      map[string]bool // clusters whose kubeadm objects exist
	// joined counts the Nodes registered so far (see annJoinOrder).
	joined int
	// stuckLeader is, by cluster, the node whose etcd member holds
	// leadership cut off from its peers (seed 003); moveLeader, by
	// cluster, the node whose member is to hand leadership over
	// (etcdctl move-leader).
	stuckLeader map[string]string
	moveLeader  map[string]string
	nextIP      int
	// cni is each node's CNI agent; specs are the clusters' (CNI, pod
	// network); admitters run each cluster's webhooks; refused is a closed
	// loopback port, where a Service without endpoints leads.
	cni       map[string]*cniState
	specs     map[string]ClusterSpec
	admitters map[string]*admitter
	refused   string
	runCtx    context.Context
	// webhooks are the policy webhooks the lab serves, by
	// cluster/namespace/service.
	webhooks map[string]*policyWebhook
	// dir is the lab folder, where stall reports go.
	dir string
}

// simVM is what the simulator knows of one VM and its Node.
type simVM struct {
	name, cluster string
	controlPlane  bool
	uuid          string
	ref           types.ManagedObjectReference
	// on: the VM's power state as last read; upAt: when its kubelet and
	// static pods start after the last power-on.
	on   bool
	upAt time.Time
	// bootTime is vCenter's summary.runtime.bootTime as last read: a new
	// one on a VM seen on both times is a power cycle between two reads.
	bootTime time.Time
	// booted: the VM has run its kubelet before (a power-on is a reboot).
	booted bool
	// beatAt is the last time the kubelet was up.
	beatAt      time.Time
	destroyedAt time.Time
	// podsUp: the control plane's static pods were started.
	podsUp bool
	// joinRefused: kubeadm join failed on it, and that was logged.
	joinRefused bool
}

func newNodeSim(vc *vim25.Client, setIP func(types.ManagedObjectReference, string) error, mc client.Client, mem inmemoryruntime.Manager, workloads map[string]*workloadServer, specs map[string]ClusterSpec, refused string, p Profile, log logr.Logger) *nodeSim {
	return &nodeSim{
		vc: vc, setIP: setIP, mc: mc, mem: mem, workloads: workloads, profile: p, log: log,
		cni: map[string]*cniState{}, specs: specs, webhooks: map[string]*policyWebhook{}, admitters: map[string]*admitter{}, refused: refused, runCtx: context.Background(),
		vms: map[string]*simVM{}, kubeletStopped: map[string]bool{}, cniBroken: map[string]bool{}, addons: map[string]bool{},
		podsStopped: map[string]map[string]bool{}, podsChanged: map[string]bool{},
		stuckLeader: map[string]string{}, moveLeader: map[string]string{},
	}
}

// run ticks until ctx ends.
func (s *nodeSim) run(ctx context.Context, every time.Duration) {
	s.mu.Lock()
	s.runCtx = ctx
	s.mu.Unlock()
	t := time.NewTicker(every)
	defer t.Stop()
	var started atomic.Int64 // unix nanoseconds of the running tick, 0 between ticks
	go s.watchdog(ctx, &started)
	for {
		started.Store(time.Now().UnixNano())
		err := s.tick(ctx)
		started.Store(0)
		if err != nil && ctx.Err() == nil {
			s.log.V(1).Info("node simulator tick", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			if s.view != nil {
				_ = s.view.Destroy(context.WithoutCancel(ctx))
			}
			s.mu.Lock()
			for key, hook := range s.webhooks {
				if err := hook.close(); err != nil {
					s.log.V(1).Info("stop policy webhook", "service", key, "error", err.Error())
				}
			}
			s.mu.Unlock()
			return
		case <-t.C:
		}
	}
}

// stallAfter is how long a tick may run before the watchdog reports it:
// a stalled simulator freezes every Node, which shows up as a phase never
// reached.
const stallAfter = 20 * time.Second

// watchdog reports, once per tick, a tick that runs longer than
// stallAfter, with every goroutine's stack in a file of the lab folder.
func (s *nodeSim) watchdog(ctx context.Context, started *atomic.Int64) {
	t := time.NewTicker(stallAfter / 4)
	defer t.Stop()
	var reported int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		at := started.Load()
		if at == 0 || at == reported || time.Since(time.Unix(0, at)) < stallAfter {
			continue
		}
		reported = at
		buf := make([]byte, 8<<20)
		buf = buf[:goruntime.Stack(buf, true)]
		file := filepath.Join(s.dir, fmt.Sprintf("nodesim-stall-%d.txt", at))
		if err := os.WriteFile(file, buf, 0o600); err != nil {
			file = "(not written: " + err.Error() + ")"
		}
		s.log.Error(errors.New("node simulator stalled"), "a tick has run too long: Nodes are frozen", "for", time.Since(time.Unix(0, at)).Round(time.Second).String(), "stacks", file)
	}
}

type vmState struct {
	ref      types.ManagedObjectReference
	on       bool
	hasIP    bool
	bootTime time.Time
}

// inventory reads every VM's BIOS UUID, power state, boot time and IP in
// one call.
func (s *nodeSim) inventory(ctx context.Context) (map[string]vmState, error) {
	if s.view == nil {
		v, err := view.NewManager(s.vc).CreateContainerView(ctx, s.vc.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
		if err != nil {
			return nil, fmt.Errorf("create VM view: %w", err)
		}
		s.view = v
	}
	var vms []mo.VirtualMachine
	if err := s.view.Retrieve(ctx, []string{"VirtualMachine"}, []string{"config.uuid", "runtime.powerState", "summary.runtime.bootTime", "guest.ipAddress"}, &vms); err != nil {
		return nil, fmt.Errorf("read VMs: %w", err)
	}
	out := make(map[string]vmState, len(vms))
	for _, vm := range vms {
		if vm.Config == nil {
			continue
		}
		st := vmState{ref: vm.Reference(), on: vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn}
		// SetGuestIP sets guest.ipAddress with the adapter's address.
		st.hasIP = vm.Guest != nil && vm.Guest.IpAddress != ""
		if bt := vm.Summary.Runtime.BootTime; bt != nil {
			st.bootTime = *bt
		}
		out[vm.Config.Uuid] = st
	}
	return out, nil
}

func (s *nodeSim) tick(ctx context.Context) error {
	inv, err := s.inventory(ctx)
	if err != nil {
		return err
	}
	var vsvms infrav1.VSphereVMList
	if err := s.mc.List(ctx, &vsvms, client.InNamespace(Namespace)); err != nil {
		return fmt.Errorf("list VSphereVMs: %w", err)
	}
	var machines clusterv1.MachineList
	if err := s.mc.List(ctx, &machines, client.InNamespace(Namespace)); err != nil {
		return fmt.Errorf("list Machines: %w", err)
	}
	// A VSphereVM is named after its VSphereMachine, which is the
	// Machine's infrastructure.
	owner := map[string]*clusterv1.Machine{}
	for i := range machines.Items {
		owner[machines.Items[i].Spec.InfrastructureRef.Name] = &machines.Items[i]
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vsvms.Items {
		if v.Spec.BiosUUID == "" {
			continue // not cloned yet
		}
		m := owner[v.Name]
		if _, ok := s.vms[v.Name]; !ok && m != nil {
			_, isCP := m.Labels[clusterv1.MachineControlPlaneLabel]
			s.vms[v.Name] = &simVM{name: v.Name, cluster: m.Spec.ClusterName, controlPlane: isCP, uuid: v.Spec.BiosUUID}
		}
	}
	var errs []error
	for name, vm := range s.vms {
		st, exists := inv[vm.uuid]
		vm.ref = st.ref
		switch {
		case !exists && vm.destroyedAt.IsZero():
			vm.destroyedAt = now
			vm.on = false
		case exists && st.on && (!vm.on || !st.bootTime.Equal(vm.bootTime) && !vm.bootTime.IsZero()):
			// Powered on, or powered off and on again between two reads
			// (a reset; CAPV powers a VM it finds off back on at once):
			// the guest boots either way.
			boot := s.profile.Boot
			if vm.booted {
				boot = s.profile.Reboot
			}
			vm.on, vm.upAt = true, now.Add(boot)
		case exists && !st.on:
			vm.on = false
		}
		vm.bootTime = st.bootTime
		if exists && st.on && !st.hasIP {
			errs = append(errs, s.assignIP(vm))
		}
		gone, err := s.reconcileVM(ctx, vm, now)
		errs = append(errs, err)
		if gone {
			delete(s.vms, name)
		}
	}
	for cluster := range s.workloads {
		errs = append(errs, s.electLeader(ctx, cluster))
		if s.addons[cluster] {
			errs = append(errs, s.reconcilePolicyWebhooks(ctx, cluster))
			if w := s.workloads[cluster]; s.cniOf(cluster) == scenario.CNICalico && w.canStore() {
				errs = append(errs, s.reconcileCalicoIPAM(ctx, w.client()))
			}
		}
	}
	return errors.Join(errs...)
}

// assignIP plays DHCP. The addresses come from TEST-NET-1 (RFC 5737),
// which no host has: CAPV ignores loopback addresses, and nothing in the
// lab ever dials a node address.
func (s *nodeSim) assignIP(vm *simVM) error {
	s.nextIP++
	ip := fmt.Sprintf("192.0.2.%d", 1+s.nextIP%250)
	if err := s.setIP(vm.ref, ip); err != nil {
		return fmt.Errorf("assign IP to %s: %w", vm.name, err)
	}
	return nil
}

// setKubelet stops or starts a node's kubelet.
func (s *nodeSim) setKubelet(node string, running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if running {
		delete(s.kubeletStopped, node)
	} else {
		s.kubeletStopped[node] = true
	}
}

// setStaticPod stops or starts one static pod of a control-plane node.
func (s *nodeSim) setStaticPod(node, component string, running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.podsStopped[node] == nil {
		s.podsStopped[node] = map[string]bool{}
	}
	if running {
		delete(s.podsStopped[node], component)
	} else {
		s.podsStopped[node][component] = true
	}
	s.podsChanged[node] = true
}

// staticPodRunning tells whether a static pod of a control-plane node runs.
func (s *nodeSim) staticPodRunning(node, component string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	vm := s.vms[node]
	return vm != nil && vm.controlPlane && s.podsStarted(vm, now) && !s.podsStopped[node][component]
}

// setCNI makes a node's CNI initialised or not.
func (s *nodeSim) setCNI(node string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		delete(s.cniBroken, node)
	} else {
		s.cniBroken[node] = true
	}
}

// kubeletUp tells whether the VM's kubelet runs now.
func (s *nodeSim) kubeletUp(vm *simVM, now time.Time) bool {
	return vm.on && s.podsStarted(vm, now) && !s.kubeletStopped[vm.name]
}

// podsStarted tells whether the VM has booted far enough to run its
// kubelet and, on a control plane, its static pods.
func (s *nodeSim) podsStarted(vm *simVM, now time.Time) bool {
	return vm.on && !now.Before(vm.upAt)
}

// reconcileVM moves one Node towards what its VM's state implies. It
// reports gone once the VM and its Node no longer exist.
func (s *nodeSim) reconcileVM(ctx context.Context, vm *simVM, now time.Time) (bool, error) {
	w := s.workloads[vm.cluster]
	if w == nil {
		return false, nil
	}
	c := s.workloads[vm.cluster].client()
	if vm.controlPlane {
		if err := s.reconcileStaticPods(ctx, c, w, vm, now); err != nil {
			return false, err
		}
	}
	node, err := getNode(ctx, c, vm.name)
	if err != nil {
		return false, err
	}
	if s.kubeletUp(vm, now) {
		vm.booted = true
		vm.beatAt = now
		if vm.controlPlane && !vm.podsUp {
			return false, nil // kubeadm init/join first
		}
		if !w.canStore() {
			return false, nil // no API server can store the kubelet's status
		}
		if node == nil {
			cidr, err := s.allocatePodCIDR(ctx, c, vm.cluster)
			if err != nil {
				return false, err
			}
			s.joined++
			if err := createNode(ctx, c, vm, cidr, s.cniDown(vm.name), s.joined, now); err != nil || cidr != "" {
				return false, err
			}
			return false, recordCIDRNotAvailable(ctx, c, vm.name)
		}
		s.reconcileCNI(ctx, vm, now)
		return false, s.setReady(ctx, c, node, vm, now)
	}
	if node == nil {
		if !vm.destroyedAt.IsZero() {
			s.forget(ctx, c, w, vm)
			return true, nil
		}
		return false, nil
	}
	if !w.canStore() {
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
	if vm.beatAt.IsZero() {
		vm.beatAt = now
	}
	if now.Sub(vm.beatAt) >= s.profile.NodeGrace {
		return false, s.setUnknown(ctx, c, node, now)
	}
	return false, nil
}

// reconcileStaticPods runs or stops a control plane's etcd member and API
// server with its VM and with the static pods stopped on it; kubeadm's init
// or join happens on first boot.
func (s *nodeSim) reconcileStaticPods(ctx context.Context, c inmemoryclient.Client, w *workloadServer, vm *simVM, now time.Time) error {
	etcdPod, apiPod := "etcd-"+vm.name, "kube-apiserver-"+vm.name
	if !s.podsStarted(vm, now) {
		if vm.podsUp {
			w.removeAPIServer(apiPod)
			w.removeEtcdMember(etcdPod)
			vm.podsUp = false
		}
		return nil
	}
	stopped := s.podsStopped[vm.name]
	wantEtcd, wantAPI := !stopped["etcd"], !stopped["kube-apiserver"]
	if vm.podsUp && w.hasAPIServer(apiPod) == wantAPI && w.hasEtcdMember(etcdPod) == wantEtcd && !s.podsChanged[vm.name] {
		return nil
	}
	if !vm.podsUp {
		if refused, err := s.joinRefused(ctx, c, vm); refused || err != nil {
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
		w.removeEtcdMember(etcdPod)
	} else if !w.hasEtcdMember(etcdPod) {
		etcdCA, etcdKey, err := s.clusterCA(ctx, vm.cluster, secret.EtcdCA)
		if err != nil {
			return err
		}
		if err := w.addEtcdMember(etcdPod, etcdCA, etcdKey); err != nil {
			return err
		}
	}
	if !wantAPI {
		w.removeAPIServer(apiPod)
	} else if !w.hasAPIServer(apiPod) {
		ca, caKey, err := s.clusterCA(ctx, vm.cluster, secret.ClusterCA)
		if err != nil {
			return err
		}
		if err := w.addAPIServer(apiPod, ca, caKey); err != nil {
			return err
		}
	}
	vm.podsUp = true
	if s.podsChanged[vm.name] {
		if err := s.writePodStatus(ctx, c, vm.name, stopped); err != nil {
			return err
		}
		delete(s.podsChanged, vm.name)
	}
	return nil
}

// writePodStatus is what the kubelet reports of a node's static pods: a
// stopped one is not Ready.
func (s *nodeSim) writePodStatus(ctx context.Context, c inmemoryclient.Client, node string, stopped map[string]bool) error {
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
// expects: cluster ID, member ID, and leadership for the first member.
func (s *nodeSim) ensureEtcdPod(ctx context.Context, c inmemoryclient.Client, vm *simVM) error {
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
	pod.Annotations = map[string]string{
		cloudv1.EtcdClusterIDAnnotationName: clusterID,
		cloudv1.EtcdMemberIDAnnotationName:  strconv.FormatUint(uint64(rand.Uint32()|1), 10),
	}
	if !leader {
		pod.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = time.Now().Format(time.RFC3339)
	}
	return createIfMissing(ctx, c, pod)
}

// setLeaderStuck makes a control-plane node's etcd member a stuck leader,
// or has it hand leadership to another member.
func (s *nodeSim) setLeaderStuck(node string, stuck bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	vm := s.vms[node]
	if vm == nil && !stuck {
		// The VM is gone, and its member with it.
		for cluster, n := range s.stuckLeader {
			if n == node {
				delete(s.stuckLeader, cluster)
			}
		}
		return nil
	}
	if vm == nil || !vm.controlPlane {
		return fmt.Errorf("no control-plane VM %s in the lab: %w", node, providers.ErrNotFound)
	}
	if stuck {
		s.stuckLeader[vm.cluster] = node
		return nil
	}
	if s.stuckLeader[vm.cluster] == node {
		delete(s.stuckLeader, vm.cluster)
	}
	s.moveLeader[vm.cluster] = node
	return nil
}

// joinRefused plays kubeadm join on a new control plane while the etcd
// leader is stuck: adding the member never commits, so the node never
// registers and its Machine stays Provisioned (seed 003). A node whose
// member exists is rebooting, not joining.
func (s *nodeSim) joinRefused(ctx context.Context, c inmemoryclient.Client, vm *simVM) (bool, error) {
	stuck := s.stuckLeader[vm.cluster]
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
func (s *nodeSim) electLeader(ctx context.Context, cluster string) error {
	c := s.workloads[cluster].client()
	pods, err := etcdPods(ctx, c)
	if err != nil || len(pods) == 0 {
		return err
	}
	w := s.workloads[cluster]
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
		if w.hasEtcdMember(p.Name) {
			live = append(live, p)
			leaderUp = leaderUp || p.Name == leaderName
		}
	}
	w.setQuorum(len(live)*2 > len(pods))
	// A stuck leader keeps leadership while it runs; moving leadership
	// away hands it to the first other live member.
	take := ""
	if stuck := "etcd-" + s.stuckLeader[cluster]; stuck != leaderName && w.hasEtcdMember(stuck) {
		take = stuck
	}
	if from := s.moveLeader[cluster]; from != "" {
		delete(s.moveLeader, cluster)
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
func (s *nodeSim) makeLeader(ctx context.Context, c inmemoryclient.Client, next corev1.Pod, from time.Time, previous, cluster string) error {
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
func (s *nodeSim) forget(ctx context.Context, c inmemoryclient.Client, w *workloadServer, vm *simVM) {
	if st := s.cni[vm.name]; st != nil && !st.inFlight {
		delete(s.cni, vm.name)
	}
	ds := cniDaemonSets[s.cniOf(vm.cluster)]
	if err := c.Delete(ctx, cniPod(ds.name, ds.image, vm.name)); err != nil && !apierrors.IsNotFound(err) {
		s.log.V(1).Info("delete CNI pod", "node", vm.name, "error", err.Error())
	}
	if !vm.controlPlane {
		return
	}
	w.removeAPIServer("kube-apiserver-" + vm.name)
	w.removeEtcdMember("etcd-" + vm.name)
	for _, component := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if err := c.Delete(ctx, staticPod(component, vm.name)); err != nil && !apierrors.IsNotFound(err) {
			s.log.V(1).Info("delete static pod", "pod", component+"-"+vm.name, "error", err.Error())
		}
	}
}

func (s *nodeSim) clusterCA(ctx context.Context, cluster string, purpose secret.Purpose) (*x509.Certificate, *rsa.PrivateKey, error) {
	sec, err := secret.GetFromNamespacedName(ctx, s.mc, client.ObjectKey{Namespace: Namespace, Name: cluster}, purpose)
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
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("%s key of cluster %s is not RSA", purpose, cluster)
	}
	return cert, rsaKey, nil
}

// ensureAddons creates, once per cluster, what kubeadm init leaves behind
// and KCP reads: the system namespaces, the kubeadm-config ConfigMap, RBAC,
// kube-proxy and CoreDNS.
func (s *nodeSim) ensureAddons(ctx context.Context, c inmemoryclient.Client, cluster string) error {
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
				Containers: []corev1.Container{{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:" + KubernetesVersion}},
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
	if s.cniOf(cluster) == scenario.CNICalico {
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

// getNode reads a Node, or nil if there is none. Nodes patched through the
// in-memory API server are stored unstructured, so they are read that way
// and converted.
func getNode(ctx context.Context, c inmemoryclient.Client, name string) (*corev1.Node, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Node")
	if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get node %s: %w", name, err)
	}
	n := &corev1.Node{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, n); err != nil {
		return nil, fmt.Errorf("decode node %s: %w", name, err)
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
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: KubernetesVersion, OperatingSystem: "linux", Architecture: "amd64"},
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

// setReady writes what a running kubelet reports, if it differs.
func (s *nodeSim) setReady(ctx context.Context, c inmemoryclient.Client, n *corev1.Node, vm *simVM, now time.Time) error {
	want := readyCondition(s.cniDown(vm.name), metav1.NewTime(now))
	changed := false
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
	if s.cniDown(vm.name) {
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

// setUnknown is the node lifecycle controller's verdict on a Node whose
// kubelet went silent for longer than the grace period.
func (s *nodeSim) setUnknown(ctx context.Context, c inmemoryclient.Client, n *corev1.Node, now time.Time) error {
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

func resourceGroup(cluster string) string { return Namespace + "/" + cluster }
