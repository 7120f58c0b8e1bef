package framework

import (
	"context"
	"fmt"
	"strings"
)

// Provider reaches the infrastructure and clusters a scenario runs against.
// Everything a provider can break or observe is an optional capability
// interface below; the runner checks for them before it starts.
type Provider interface {
	// Name is the provider's short name (vsphere, lab, fake), as recorded in
	// results and journals.
	Name() string
	// Resolve returns every object the selector matches, sorted by name. A
	// selector field the provider cannot evaluate is an error wrapping
	// ErrUnsupported; no match is an empty list, not an error.
	Resolve(ctx context.Context, sel Selector) ([]Object, error)
}

// Object is one thing a fault or condition acts on.
type Object struct {
	// Kind is what the object is (VirtualMachine, Machine, Node).
	Kind string `json:"kind"`
	Name string `json:"name"`
	// ID identifies the object across reconnections (a vSphere managed
	// object reference, a Kubernetes UID).
	ID string `json:"id"`
	// Attributes hold provider facts worth recording (BIOS UUID, path).
	Attributes map[string]string `json:"attributes,omitempty"`
}

func (o Object) String() string { return o.Kind + "/" + o.Name }

// Capability names a group of faults and probes a provider may offer.
type Capability string

// The capabilities, each matching one interface below.
const (
	CapVMPower     Capability = "VMPower"
	CapVMLifecycle Capability = "VMLifecycle"
	CapVMNetwork   Capability = "VMNetwork"
)

var capabilities = []Capability{CapVMPower, CapVMLifecycle, CapVMNetwork, CapClusterAPI, CapObjects, CapNodeKubelet, CapNodeStaticPods, CapEtcdLeadership, CapObjectWrites, CapNodes}

// PowerState is a VM's power state, as vSphere names it.
type PowerState string

// The power states of a VM.
const (
	PoweredOn  PowerState = "poweredOn"
	PoweredOff PowerState = "poweredOff"
	Suspended  PowerState = "suspended"
)

// VMPower changes and reads the power state of VMs. Every call waits for the
// vSphere task to finish or ctx to end.
type VMPower interface {
	PowerOn(ctx context.Context, vm Object) error
	// PowerOff is a hard power-off, like pulling the plug.
	PowerOff(ctx context.Context, vm Object) error
	// ShutdownGuest asks the guest OS to shut down; it returns once the
	// request is accepted, not when the VM is off.
	ShutdownGuest(ctx context.Context, vm Object) error
	Reset(ctx context.Context, vm Object) error
	Suspend(ctx context.Context, vm Object) error
	PowerState(ctx context.Context, vm Object) (PowerState, error)
}

// VMLifecycle destroys VMs and tells whether they still exist.
type VMLifecycle interface {
	// Destroy powers the VM off if needed and deletes it from disk.
	Destroy(ctx context.Context, vm Object) error
	// Exists reports whether the VM is still in the inventory.
	Exists(ctx context.Context, vm Object) (bool, error)
}

// VMNetwork connects and disconnects a VM's network adapters. nic is the
// adapter's device label ("Network adapter 1") or "" for the first one.
type VMNetwork interface {
	SetNICConnected(ctx context.Context, vm Object, nic string, connected bool) error
	NICConnected(ctx context.Context, vm Object, nic string) (bool, error)
}

// CapNodeKubelet is the capability behind NodeKubelet.
const CapNodeKubelet Capability = "NodeKubelet"

// NodeKubelet stops and starts the kubelet of a Machine's node, as
// `systemctl stop kubelet` on the host would. The node's static pods keep
// running. The lab and kind implement it; vSphere through VMware Tools guest
// operations, given a guest login.
type NodeKubelet interface {
	SetKubelet(ctx context.Context, m Object, running bool) error
}

// CapNodeStaticPods is the capability behind NodeStaticPods.
const CapNodeStaticPods Capability = "NodeStaticPods"

// NodeStaticPods stops and starts the control-plane static pods (etcd,
// kube-apiserver, ...) of a Machine's node, as moving a manifest out of
// /etc/kubernetes/manifests and back would. component is one of
// StaticPodComponents.
type NodeStaticPods interface {
	SetStaticPod(ctx context.Context, m Object, component string, running bool) error
	// StaticPodRunning tells whether the component runs on the node now:
	// the kubelet stops it some seconds after its manifest is moved.
	StaticPodRunning(ctx context.Context, m Object, component string) (bool, error)
}

// CapEtcdLeadership is the capability behind EtcdLeadership.
const CapEtcdLeadership Capability = "EtcdLeadership"

// EtcdLeadership holds etcd's leadership on a control-plane Machine's
// member. A stuck leader is seed 003's state after a crash: the member
// keeps leadership and answers its clients, but its peers cannot reach
// it, so no membership change commits and a new control plane cannot
// join. Freeing it is the seed's runbook, `etcdctl move-leader` to a
// member that can serve.
type EtcdLeadership interface {
	SetLeaderStuck(ctx context.Context, m Object, stuck bool) error
}

// CapNodes is the capability behind Nodes. A ClusterAPI provider has it
// through its Machines: requiring ClusterAPI implies it.
const CapNodes Capability = "Nodes"

// Nodes reads the Kubernetes Node behind a target and tells whether the
// target's cluster API server answers, for providers with no Cluster API
// Machines (kind's node containers).
type Nodes interface {
	// NodeOf reads obj's Node: the Node, NodeReady, NodeMessage and Stamps
	// fields of a MachineState. Gone is set when obj itself is gone.
	NodeOf(ctx context.Context, obj Object) (MachineState, error)
	// APIServer tells whether obj's cluster API server answers a read;
	// the error says why not.
	APIServer(ctx context.Context, obj Object) error
}

// nodesOf is the Nodes view of p: its own, or its ClusterAPI's Machines.
func nodesOf(p Provider) (Nodes, error) {
	if c, ok := p.(ClusterAPI); ok {
		return machineNodes{c}, nil
	}
	return as[Nodes](p, CapNodes)
}

// machineNodes reads a Machine's Node through ClusterAPI.
type machineNodes struct{ ClusterAPI }

func (m machineNodes) NodeOf(ctx context.Context, obj Object) (MachineState, error) {
	return m.Machine(ctx, obj)
}

// VMInfo is one VM of a vCenter inventory.
type VMInfo struct {
	Name string
	// UUID is the BIOS UUID, the one in a CAPV providerID.
	UUID       string
	PowerState PowerState
}

// Inventory is optional: it lists a vCenter's VMs, read-only, for the
// inventory check (orphan VMs, Machines without a VM).
type Inventory interface {
	ListVMs(ctx context.Context) ([]VMInfo, error)
}

// Watcher is optional: it notifies when an object may have changed, so waits
// react at once instead of at the next poll. The channel is closed when ctx
// ends or the watch breaks; waits then fall back to polling.
type Watcher interface {
	Watch(ctx context.Context, obj Object) (<-chan struct{}, error)
}

// Describer is optional: it tells how to reach the provider again, so that
// `faultline recover` can undo a crashed run's faults. Secrets are never part
// of a ProviderRef; they come from the environment at recovery time.
type Describer interface {
	Ref() ProviderRef
}

// ProviderRef is what a journal records about the provider.
type ProviderRef struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config,omitempty"`
}

// capabilityCheck tells, for each capability, whether a provider
// implements its interface.
var capabilityCheck = map[Capability]func(Provider) bool{
	CapVMPower:        implements[VMPower],
	CapVMLifecycle:    implements[VMLifecycle],
	CapVMNetwork:      implements[VMNetwork],
	CapClusterAPI:     implements[ClusterAPI],
	CapObjects:        implements[Objects],
	CapNodeKubelet:    implements[NodeKubelet],
	CapNodeStaticPods: implements[NodeStaticPods],
	CapEtcdLeadership: implements[EtcdLeadership],
	CapObjectWrites:   implements[ObjectWriter],
	CapNodes:          func(p Provider) bool { return implements[Nodes](p) || implements[ClusterAPI](p) },
}

func implements[T any](p Provider) bool {
	_, ok := p.(T)
	return ok
}

// CapabilityCondition is implemented by a provider whose capabilities
// depend on how it was set up: the vSphere provider runs node faults only
// when given a guest login.
type CapabilityCondition interface {
	// CapabilityUnavailable returns why c cannot be used now (an error
	// that wraps ErrUnsupported), or nil when it can.
	CapabilityUnavailable(c Capability) error
}

// HasCapability reports whether p implements the interface behind c and,
// for a CapabilityCondition, can use it.
func HasCapability(p Provider, c Capability) bool {
	check, ok := capabilityCheck[c]
	return ok && check(p) && unavailable(p, c) == nil
}

func unavailable(p Provider, c Capability) error {
	if cc, ok := p.(CapabilityCondition); ok {
		return cc.CapabilityUnavailable(c)
	}
	return nil
}

func knownCapability(c Capability) bool {
	for _, k := range capabilities {
		if k == c {
			return true
		}
	}
	return false
}

func capabilityList() string {
	names := make([]string, len(capabilities))
	for i, c := range capabilities {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

func unsupported(p Provider, c Capability) error {
	if err := unavailable(p, c); err != nil {
		return fmt.Errorf("provider %s lacks capability %s: %w", p.Name(), c, err)
	}
	return fmt.Errorf("provider %s lacks capability %s: %w", p.Name(), c, ErrUnsupported)
}
