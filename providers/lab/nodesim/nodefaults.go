package nodesim

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/providers"
)

// nodeFaults is what faultline has done to the lab's nodes: kubelets
// stopped, static pods stopped, CNIs broken, etcd leaders stuck or to be
// moved. The provider's fault calls write it from the engine's goroutines;
// the node simulator reads a copy at the start of each tick, so its lock
// is never held across an API call.
type nodeFaults struct {
	mu sync.Mutex
	// kubeletStopped: when each stopped kubelet was stopped.
	kubeletStopped map[string]time.Time
	// podsStopped: the static pods stopped on a node, by component;
	// podsGen counts a node's static-pod changes, so the simulator writes
	// their status once per change.
	podsStopped map[string]map[string]bool
	podsGen     map[string]int
	cniBroken   map[string]bool
	// stuckLeader is, by cluster, the node whose etcd member holds
	// leadership cut off from its peers (seed 003); moveLeader, by
	// cluster, the node whose member is to hand leadership over
	// (etcdctl move-leader).
	stuckLeader map[string]string
	moveLeader  map[string]string
	// memberStart is, by cluster, how long a joining control plane's etcd
	// member takes to start after kubeadm added it as a learner.
	memberStart map[string]time.Duration
}

func newNodeFaults() *nodeFaults {
	return &nodeFaults{
		kubeletStopped: map[string]time.Time{}, podsStopped: map[string]map[string]bool{}, podsGen: map[string]int{},
		cniBroken: map[string]bool{}, stuckLeader: map[string]string{}, moveLeader: map[string]string{},
		memberStart: map[string]time.Duration{},
	}
}

// faultsNow is one tick's copy of nodeFaults (moveLeader excepted: a tick
// takes it, see takeMoveLeader).
type faultsNow struct {
	kubeletStopped map[string]time.Time
	podsStopped    map[string]map[string]bool
	podsGen        map[string]int
	cniBroken      map[string]bool
	stuckLeader    map[string]string
	memberStart    map[string]time.Duration
}

func (f *nodeFaults) now() faultsNow {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := faultsNow{
		kubeletStopped: maps.Clone(f.kubeletStopped), podsStopped: make(map[string]map[string]bool, len(f.podsStopped)),
		podsGen: maps.Clone(f.podsGen), cniBroken: maps.Clone(f.cniBroken), stuckLeader: maps.Clone(f.stuckLeader),
		memberStart: maps.Clone(f.memberStart),
	}
	for node, stopped := range f.podsStopped {
		out.podsStopped[node] = maps.Clone(stopped)
	}
	return out
}

// setKubelet stops or starts a node's kubelet.
func (f *nodeFaults) setKubelet(node string, running bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if running {
		delete(f.kubeletStopped, node)
	} else {
		f.kubeletStopped[node] = time.Now()
	}
}

// setStaticPod stops or starts one static pod of a control-plane node.
func (f *nodeFaults) setStaticPod(node, component string, running bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.podsStopped[node] == nil {
		f.podsStopped[node] = map[string]bool{}
	}
	if running {
		delete(f.podsStopped[node], component)
	} else {
		f.podsStopped[node][component] = true
	}
	f.podsGen[node]++
}

func (f *nodeFaults) podStopped(node, component string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.podsStopped[node][component]
}

// setCNI makes a node's CNI initialised or not.
func (f *nodeFaults) setCNI(node string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok {
		delete(f.cniBroken, node)
	} else {
		f.cniBroken[node] = true
	}
}

// setLeaderStuck makes a control-plane node's etcd member a stuck leader,
// or has it hand leadership to another member; v is what the simulator
// last saw of the node, nil when its VM is gone.
func (f *nodeFaults) setLeaderStuck(node string, v *nodeView, stuck bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v == nil && !stuck {
		// The VM is gone, and its member with it.
		for cluster, n := range f.stuckLeader {
			if n == node {
				delete(f.stuckLeader, cluster)
			}
		}
		return nil
	}
	if v == nil || !v.controlPlane {
		return fmt.Errorf("no control-plane VM %s in the lab: %w", node, providers.ErrNotFound)
	}
	if stuck {
		f.stuckLeader[v.cluster] = node
		return nil
	}
	if f.stuckLeader[v.cluster] == node {
		delete(f.stuckLeader, v.cluster)
	}
	f.moveLeader[v.cluster] = node
	return nil
}

// setMemberStart sets how long the etcd members that join cluster take
// to start (zero: at once).
func (f *nodeFaults) setMemberStart(cluster string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d == 0 {
		delete(f.memberStart, cluster)
	} else {
		f.memberStart[cluster] = d
	}
}

// forgetCluster drops the faults of a removed cluster and of its nodes.
func (f *nodeFaults) forgetCluster(cluster string, nodes []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.stuckLeader, cluster)
	delete(f.moveLeader, cluster)
	delete(f.memberStart, cluster)
	for _, n := range nodes {
		delete(f.kubeletStopped, n)
		delete(f.podsStopped, n)
		delete(f.podsGen, n)
		delete(f.cniBroken, n)
	}
}

// takeMoveLeader returns, once, the node of cluster whose member is to
// hand leadership over.
func (f *nodeFaults) takeMoveLeader(cluster string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	from := f.moveLeader[cluster]
	delete(f.moveLeader, cluster)
	return from
}

// nodeView is what the simulator last saw of a node, for the provider's
// probes and faults: the tick publishes it as it reads the VMs.
type nodeView struct {
	cluster      string
	controlPlane bool
	on           bool
	// upAt is when its kubelet and static pods start after the last
	// power-on.
	upAt time.Time
}

// podsStarted tells whether the node has booted far enough to run its
// kubelet and, on a control plane, its static pods.
func (v nodeView) podsStarted(now time.Time) bool { return v.on && !now.Before(v.upAt) }
