package nodesim

import (
	"context"
	"errors"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sim plays kubelet, kubeadm and the node lifecycle controller for every
// VM that backs a Machine; nothing upstream ties a vcsim VM to its Node. It
// reads the VMs' power state through the vSphere API, so a fault injected
// there (power off, destroy) reaches the workload cluster the way it would
// on a real one.
//
// It plays several parts, each in files of its own: the kubelet and the
// node lifecycle controller (kubelet.go), kubeadm's static pods and etcd
// (staticpods.go), the CNI agents and admission (cni.go, calico.go,
// labwebhooks.go). The state shared with other goroutines has a lock of
// its own and is never held across an API call: faults (nodeFaults, from
// the provider), what the ticks saw of each node (views, for the
// provider's probes), the CNI agents (cniAgents, created in the
// background) and the admitters (read by the workload API servers).
// Everything else belongs to the goroutine that ticks.
type Sim struct {
	config

	faults *nodeFaults
	// views are the nodeView of every VM the simulator knows, by name.
	views     *labconfig.Map[nodeView]
	cni       *cniAgents
	admitters *admitters

	// Owned by the ticking goroutine.
	vmView vcsim.VMView
	vms    map[string]*simVM // by VM (and Node) name
	addons map[string]bool   // clusters whose kubeadm objects exist
	// podsWritten is, by node, the nodeFaults.podsGen whose static pod
	// status was last written.
	podsWritten map[string]int
	// joined counts the Nodes registered so far (see annJoinOrder).
	joined int
	nextIP int
	// webhooks are the policy webhooks the lab serves, by
	// cluster/namespace/service.
	webhooks map[string]*policyWebhook
	// ipam is, by cluster, the last time Calico's IPAM was played.
	ipam map[string]ipamRun
}

// Config is what the simulator acts through: vcsim (its VMs, and the
// guest IPs CAPV waits for) and the management cluster, with the lab's
// profile.
type Config struct {
	VCenter    *vim25.Client
	SetGuestIP func(types.ManagedObjectReference, string) error
	Management client.Client
	Profile    labconfig.Profile
	Log        logr.Logger
	// Dir is the lab folder, where stall reports go.
	Dir string
}

// config is the simulator's fixed state.
type config struct {
	vc    *vim25.Client
	setIP func(types.ManagedObjectReference, string) error
	mc    client.Client
	mem   inmemoryruntime.Manager
	// clusters are the simulated clusters, which AddCluster and
	// RemoveCluster change while the simulator runs.
	clusters *labClusters
	// refused is a closed loopback port, where a Service without
	// endpoints leads.
	refused string
	profile labconfig.Profile
	log     logr.Logger
	// dir is the lab folder, where stall reports go.
	dir string
}

// simVM is what the simulator knows of one VM and its Node.
type simVM struct {
	name, cluster string
	controlPlane  bool
	uuid          string
	// version is its Machine's Kubernetes version: the kubelet's, as
	// the image the VM was cloned from runs it.
	version string
	ref     types.ManagedObjectReference
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
	// join is its etcd member's join as a learner, until promoted.
	join *etcdJoin
}

// New starts the simulated clusters' store; AddCluster adds each, Run
// runs them.
func New(ctx context.Context, cfg Config) (*Sim, error) {
	if cfg.Log.GetSink() == nil {
		cfg.Log = logr.Discard()
	}
	mem, err := workloadapi.NewStore(ctx)
	if err != nil {
		return nil, err
	}
	refused, err := closedPort()
	if err != nil {
		return nil, err
	}
	return newSim(config{
		vc: cfg.VCenter, setIP: cfg.SetGuestIP, mc: cfg.Management, mem: mem, clusters: labconfig.NewMap[labCluster](),
		refused: refused, profile: cfg.Profile, log: cfg.Log, dir: cfg.Dir,
	}), nil
}

func newSim(cfg config) *Sim {
	return &Sim{
		config:    cfg,
		faults:    newNodeFaults(),
		views:     labconfig.NewMap[nodeView](),
		cni:       &cniAgents{m: map[string]*cniState{}},
		admitters: &admitters{m: map[string]*workloadapi.Admitter{}, runCtx: context.Background()},
		vms:       map[string]*simVM{}, addons: map[string]bool{}, podsWritten: map[string]int{},
		webhooks: map[string]*policyWebhook{}, ipam: map[string]ipamRun{},
	}
}

// Run ticks every every until ctx ends.
func (s *Sim) Run(ctx context.Context, every time.Duration) {
	s.admitters.setRunContext(ctx)
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
			s.vmView.Close(ctx)
			for key, hook := range s.webhooks {
				if err := hook.close(); err != nil {
					s.log.V(1).Info("stop policy webhook", "service", key, "error", err.Error())
				}
			}
			return
		case <-t.C:
		}
	}
}

// stallAfter is how long a tick may run before the watchdog reports it:
// a stalled simulator freezes every Node, which shows up as a phase never
// reached. A tick holds no lock across its API calls, so only a stalled
// API server (or vcsim) can stall it.
const stallAfter = 20 * time.Second

// watchdog reports, once per tick, a tick that runs longer than
// stallAfter, with every goroutine's stack in a file of the lab folder.
func (s *Sim) watchdog(ctx context.Context, started *atomic.Int64) {
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

func (s *Sim) tick(ctx context.Context) error {
	inv, err := s.inventory(ctx)
	if err != nil {
		return err
	}
	clusters, err := s.discover(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	f := s.faults.now()
	s.forgetRemoved(clusters)
	errs := s.reconcileVMs(ctx, inv, f, now)
	return errors.Join(append(errs, s.reconcileClusters(ctx, clusters, f, now)...)...)
}

// discover adds the VMs of the simulated clusters that CAPV cloned since
// the last tick, and returns the clusters as they are now.
func (s *Sim) discover(ctx context.Context) (map[string]labCluster, error) {
	// Read from the manager's cache, and only read: the objects are the
	// cache's own, not copies (copying every VSphereVM and Machine five
	// times a second was a fifth of a tick's time in a lab of 20 clusters).
	var vsvms infrav1.VSphereVMList
	if err := s.mc.List(ctx, &vsvms, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list VSphereVMs: %w", err)
	}
	var machines clusterv1.MachineList
	if err := s.mc.List(ctx, &machines, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Machines: %w", err)
	}
	// A VSphereVM is named after its VSphereMachine, which is the
	// Machine's infrastructure.
	owner := map[string]*clusterv1.Machine{}
	for i := range machines.Items {
		m := &machines.Items[i]
		owner[m.Namespace+"/"+m.Spec.InfrastructureRef.Name] = m
	}
	clusters := s.clusters.All()
	for _, v := range vsvms.Items {
		if v.Spec.BiosUUID == "" {
			continue // not cloned yet
		}
		m := owner[v.Namespace+"/"+v.Name]
		if m == nil {
			continue
		}
		lc, ok := clusters[labconfig.ClusterKey(m.Namespace, m.Spec.ClusterName)]
		if !ok || lc.workload == nil {
			continue // real nodes run it, or its cluster is being removed
		}
		if _, ok := s.vms[v.Name]; !ok {
			_, isCP := m.Labels[clusterv1.MachineControlPlaneLabel]
			s.vms[v.Name] = &simVM{name: v.Name, cluster: lc.spec.Key(), controlPlane: isCP, uuid: v.Spec.BiosUUID, version: m.Spec.Version}
		}
	}
	return clusters, nil
}

// reconcileVMs follows each VM's power state (inv, by UUID) and plays its
// node.
func (s *Sim) reconcileVMs(ctx context.Context, inv map[string]vmState, f faultsNow, now time.Time) []error {
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
		s.views.Set(name, nodeView{cluster: vm.cluster, controlPlane: vm.controlPlane, on: vm.on, upAt: vm.upAt})
		if exists && st.on && !st.hasIP {
			errs = append(errs, s.assignIP(vm))
		}
		gone, err := s.reconcileVM(ctx, vm, f, now)
		errs = append(errs, err)
		if gone {
			delete(s.vms, name)
			s.views.Remove(name)
		}
	}
	return errs
}

// reconcileClusters plays each simulated cluster's etcd leadership, policy
// webhooks and Calico IPAM.
func (s *Sim) reconcileClusters(ctx context.Context, clusters map[string]labCluster, f faultsNow, now time.Time) []error {
	var errs []error
	var members map[string]string // read once, for the Calico clusters
	for cluster, lc := range clusters {
		if lc.workload == nil {
			continue
		}
		errs = append(errs, s.electLeader(ctx, cluster, f))
		if s.addons[cluster] {
			errs = append(errs, s.reconcilePolicyWebhooks(ctx, cluster))
			if w := lc.workload; lc.spec.CNIName() == labconfig.CNICalico && w.CanStore() {
				if members == nil {
					members = s.members()
				}
				if s.ipamDue(cluster, members[cluster], now) {
					errs = append(errs, s.reconcileCalicoIPAM(ctx, w.Client()))
				}
			}
		}
	}
	return errs
}

// errClusterRemoved is what the simulator's background work on a cluster
// that was removed meets.
var errClusterRemoved = errors.New("the cluster was removed from the lab")

// resourceGroup is the in-memory resource group of the cluster of key
// (namespace/name).
func resourceGroup(key string) string { return key }

// workload is the API server of the simulated cluster of key, nil once
// the cluster is removed.
func (s *Sim) workload(key string) *workloadapi.Server {
	lc, _ := s.clusters.Get(key)
	return lc.workload
}

// spec is the shape of the cluster of key.
func (s *Sim) spec(key string) labconfig.ClusterSpec {
	lc, _ := s.clusters.Get(key)
	return lc.spec
}
