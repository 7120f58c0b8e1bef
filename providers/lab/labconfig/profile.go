package labconfig

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Profile is the lab's clock: how long the simulated kubelets, the node
// lifecycle controller and the health checks take. Every result names the
// profile it ran with, because a compressed run's times are not a real
// cluster's.
type Profile struct {
	Name string `json:"name"`
	// NodeGrace is kube-controller-manager's node-monitor-grace-period:
	// how long a Node's heartbeats may be missing before its Ready
	// condition turns Unknown.
	NodeGrace time.Duration `json:"nodeGrace"`
	// Heartbeat is how often a running kubelet posts node status.
	Heartbeat time.Duration `json:"heartbeat"`
	// Boot is the time from a VM's power-on to its kubelet registering the
	// Node (cloud-init and kubeadm); Reboot is the same after a power-on of
	// an already bootstrapped VM.
	Boot   time.Duration `json:"boot"`
	Reboot time.Duration `json:"reboot"`
	// NodeDelete is how long after its VM is destroyed the cloud provider's
	// node lifecycle controller deletes the Node.
	NodeDelete time.Duration `json:"nodeDelete"`
	// MHCUnhealthy and MHCNodeStartup are the MachineHealthCheck timeouts
	// the lab's clusters are created with: on Ready=Unknown (the kubelet
	// stopped posting) and until a Node appears; MHCNotReady is the one on
	// Ready=False (the kubelet posts that the node is not ready: no CNI).
	MHCUnhealthy   time.Duration `json:"mhcUnhealthy"`
	MHCNodeStartup time.Duration `json:"mhcNodeStartup"`
	MHCNotReady    time.Duration `json:"mhcNotReady"`
	// SyncPeriod is the controllers' resync; it decides when CAPV notices
	// an out-of-band power-off and powers the VM on again.
	SyncPeriod time.Duration `json:"syncPeriod"`
	// ConnectRetry is how soon ClusterCache retries a failed connection to
	// a workload cluster (30s upstream).
	ConnectRetry time.Duration `json:"connectRetry"`
	// RemoteGrace is how long a lost workload cluster connection is
	// tolerated before conditions turn Unknown; Cluster API requires 2m or
	// more.
	RemoteGrace     time.Duration `json:"remoteGrace"`
	EtcdDialTimeout time.Duration `json:"etcdDialTimeout"`
	EtcdCallTimeout time.Duration `json:"etcdCallTimeout"`
	// LearnerCatchUp is how long a joining control plane's etcd member,
	// once started, stays a learner before kubeadm's MemberPromote
	// succeeds (it replays the leader's log). KCP neither scales nor
	// remediates while a learner exists, and retries 15 s later: compressed
	// time promotes at once.
	LearnerCatchUp time.Duration `json:"learnerCatchUp"`
	// GuestShutdown is how long a guest takes to power off once asked to
	// shut down; SessionIdle how long vCenter keeps a session with no
	// call (the lab's vCenter, vcsim.Input).
	GuestShutdown time.Duration `json:"guestShutdown"`
	SessionIdle   time.Duration `json:"sessionIdle"`
	// VMTaskTime is how long a VM's task runs at the lab's vCenter (power
	// operations, reconfigure, relocate, destroy), during which another
	// task on the VM is refused with TaskInProgress (vcsim.Input). Real
	// time takes a second, as a vCenter's power operation does;
	// compressed time runs them at once, as vcsim does, so the
	// controllers' races are seconds shorter, not changed in kind.
	VMTaskTime time.Duration `json:"vmTaskTime"`
	// Gates are the Cluster API feature gates the profile sets (CAPV's
	// controllers follow them too); the others keep upstream's defaults.
	Gates map[string]bool `json:"gates,omitempty"`
}

// The two named profiles. Real follows the upstream defaults (kubelet and
// kube-controller-manager, the MachineHealthCheck timeouts of CAPI's
// templates, a 10m controller resync); compressed keeps their order and
// ratios where the controllers allow it, in seconds.
var profiles = map[string]Profile{
	"real": {
		Name: "real", NodeGrace: 40 * time.Second, Heartbeat: 10 * time.Second,
		Boot: 60 * time.Second, Reboot: 45 * time.Second, NodeDelete: 40 * time.Second,
		MHCUnhealthy: 5 * time.Minute, MHCNodeStartup: 10 * time.Minute, MHCNotReady: 5 * time.Minute,
		SyncPeriod: 10 * time.Minute, ConnectRetry: 30 * time.Second, RemoteGrace: 5 * time.Minute,
		EtcdDialTimeout: 10 * time.Second, EtcdCallTimeout: 15 * time.Second,
		LearnerCatchUp: 2 * time.Second,
		GuestShutdown:  15 * time.Second, SessionIdle: 30 * time.Minute, VMTaskTime: time.Second,
	},
	"compressed": {
		Name: "compressed", NodeGrace: 2 * time.Second, Heartbeat: time.Second,
		Boot: 500 * time.Millisecond, Reboot: 45 * time.Second, NodeDelete: 3 * time.Second,
		MHCUnhealthy: 3 * time.Second, MHCNodeStartup: 2 * time.Minute, MHCNotReady: 3 * time.Second,
		// Kept at the real 10m: a shorter resync would make CAPV power a
		// powered-off VM back on before any health check could act.
		SyncPeriod: 10 * time.Minute, ConnectRetry: time.Second, RemoteGrace: 2 * time.Minute,
		EtcdDialTimeout: 2 * time.Second, EtcdCallTimeout: 5 * time.Second,
		GuestShutdown: 15 * time.Second, SessionIdle: 30 * time.Minute,
		// Upstream spaces the reconciles of one object at least 1 s apart
		// (and a MachineHealthCheck's more): a lab that waits on them
		// spends most of its time there. Off, the controllers react as
		// soon as their watches fire.
		Gates: map[string]bool{"ReconcilerRateLimiting": false},
	},
}

// RealNodeNotReady is the shortest Ready=False timeout of a real-node
// cluster's health checks: a real node that has just registered is
// NotReady ("cni plugin not initialized") until its CNI agent's pod runs,
// 5-20 s on this machine, while the simulated kubelet registers Ready. A
// compressed 3 s would remediate every new control plane before it could
// turn Ready. The faults themselves (a power-off, a stopped kubelet) turn
// Ready Unknown, whose timeout stays the profile's.
const RealNodeNotReady = 30 * time.Second

// DefaultProfile is the profile a lab uses unless told otherwise.
const DefaultProfile = "compressed"

// ProfileNamed returns a named profile.
func ProfileNamed(name string) (Profile, error) {
	p, ok := profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown lab profile %q: expected one of %s", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// ProfileNames lists the named profiles.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Knobs lists every setting of the profile, for results and reports:
// each timing, and each feature gate it sets as gate.NAME.
func (p Profile) Knobs() map[string]string {
	out := map[string]string{
		"nodeGrace": p.NodeGrace.String(), "heartbeat": p.Heartbeat.String(), "boot": p.Boot.String(), "reboot": p.Reboot.String(),
		"nodeDelete": p.NodeDelete.String(), "mhcUnhealthy": p.MHCUnhealthy.String(), "mhcNodeStartup": p.MHCNodeStartup.String(),
		"mhcNotReady": p.MHCNotReady.String(), "mhcNotReadyRealNodes": max(p.MHCNotReady, RealNodeNotReady).String(),
		"syncPeriod": p.SyncPeriod.String(), "connectRetry": p.ConnectRetry.String(), "remoteGrace": p.RemoteGrace.String(),
		"etcdDialTimeout": p.EtcdDialTimeout.String(), "etcdCallTimeout": p.EtcdCallTimeout.String(),
		"learnerCatchUp":        p.LearnerCatchUp.String(),
		"guestShutdown":         p.GuestShutdown.String(),
		"sessionIdle":           p.SessionIdle.String(),
		"vmTaskTime":            p.VMTaskTime.String(),
		"remoteConnectionGrace": p.RemoteConnectionGrace().String(),
		// A Node with pods is drained before its Machine's VM goes: Cluster
		// API retries a drain that left pods every 20s, a constant no
		// flag shortens, and the lab's Machines set no nodeDrainTimeout.
		"drainRetryInterval": upstreamDrainRetry.String() + " (Cluster API's constant: not shortened)",
		"nodeDrainTimeout":   "unset (drain until done, Cluster API's default)",
	}
	for g, on := range p.Gates {
		out["gate."+g] = fmt.Sprint(on)
	}
	return out
}

// upstreamDrainRetry is Cluster API's drainRetryInterval
// (internal/controllers/machine).
const upstreamDrainRetry = 20 * time.Second

// upstreamConnectRetry is Cluster API's ClusterCache connection retry,
// which its managers take no flag for.
const upstreamConnectRetry = 30 * time.Second

// KnobsOn is Knobs as a lab of stack runs them: a stack of manager
// processes keeps the settings its managers take no flag for at the
// release's own values; the compiled stack lists how it differs from
// them (InProcess).
func (p Profile) KnobsOn(s Stack) map[string]string {
	out := p.Knobs()
	if s.Compiled {
		inProcessKnobs(out)
	} else {
		out["connectRetry"] = upstreamConnectRetry.String() + " (the release's: its managers take no flag for it)"
	}
	return out
}

// RemoteConnectionGrace is Cluster API's --remote-connection-grace-period
// on every stack: half the conditions' grace, which the release requires
// to be the longer.
func (p Profile) RemoteConnectionGrace() time.Duration { return p.RemoteGrace / 2 }
