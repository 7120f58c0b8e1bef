package providers

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var (
	// ErrUnsupported is returned when a provider lacks a capability.
	ErrUnsupported = errors.New("unsupported by this provider")
	// ErrNotFound is returned when a target or object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidState: the object is not in a state that allows the
	// operation now (a VM already powered on, or a task on it in
	// progress): the operation may have been done by another call.
	ErrInvalidState = errors.New("not in a state that allows it")
	// ErrNotConfigured: a capability the provider has, left unusable by
	// how it was opened (a flag not given, such as --vcenter-url): a
	// scenario that needs it is an error, not a skip, since the run
	// could not reach what it was pointed at.
	ErrNotConfigured = errors.New("not configured")
	// ErrNotAuthenticated: the provider's login was refused, or its
	// session is gone and could not be made again. Waiting does not help.
	ErrNotAuthenticated = errors.New("not authenticated")
)

// InfraError marks a failure of the infrastructure or of faultline's access
// to it (vCenter unreachable, a task that failed), as opposed to a scenario
// whose expectations were not met.
type InfraError struct {
	Err error
}

func (e *InfraError) Error() string { return e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// Provider reaches the infrastructure and clusters a scenario runs against.
// Everything a provider can break or observe is an optional capability
// interface below; the engine checks for them before it starts.
type Provider interface {
	// Name is the provider's short name (vsphere, capi, kind, lab, fake),
	// as recorded in results and journals.
	Name() string
	// Resolve returns every object the selector matches, sorted by name. A
	// selector field the provider cannot evaluate is an error wrapping
	// ErrUnsupported; no match is an empty list, not an error.
	Resolve(ctx context.Context, sel Selector) ([]Object, error)
}

// Object is one thing a fault or condition acts on.
type Object struct {
	// Kind is what the object is (VirtualMachine, Machine, KindNode).
	Kind string `json:"kind"`
	Name string `json:"name"`
	// ID identifies the object across reconnections (a vSphere managed
	// object reference, a Kubernetes UID, a container ID).
	ID string `json:"id"`
	// Attributes hold the facts Resolve found, read back by later calls of
	// the same provider and by the engine's guards.
	Attributes map[Attribute]string `json:"attributes,omitempty"`
}

func (o Object) String() string { return o.Kind + "/" + o.Name }

// Attribute names one fact of an Object's Attributes.
type Attribute string

// The attributes providers set. A provider sets those it knows; an absent
// attribute reads as "".
const (
	// AttrNamespace and AttrCluster are a Cluster API Machine's namespace
	// and its Cluster's name (kind: the kind cluster's name).
	AttrNamespace Attribute = "namespace"
	AttrCluster   Attribute = "cluster"
	// AttrRole is RoleControlPlane or RoleWorker.
	AttrRole Attribute = "role"
	// AttrNode is the name of the object's Kubernetes Node.
	AttrNode Attribute = "node"
	// AttrProviderID is a Machine's spec.providerID when it was resolved.
	AttrProviderID Attribute = "providerID"
	// AttrOwnerKind and AttrOwner name a Machine's owner
	// (MachineDeployment or KubeadmControlPlane); AttrSiblings lists the
	// owner's Machines when it was resolved, comma-separated.
	AttrOwnerKind Attribute = "ownerKind"
	AttrOwner     Attribute = "owner"
	AttrSiblings  Attribute = "siblings"
	// AttrOwnerGeneration is the owner's metadata.generation and
	// AttrVersion the Machine's Kubernetes version (spec.version) when it
	// was resolved: "no Machine rolled out" compares against them.
	AttrOwnerGeneration Attribute = "ownerGeneration"
	AttrVersion         Attribute = "version"
	// AttrBootstrapConfig is a Machine's bootstrap configuration, as
	// GROUP/KIND/NAME (a KubeadmConfig's spec is what KCP compares to
	// decide a rollout).
	AttrBootstrapConfig Attribute = "bootstrapConfig"
	// AttrUUID is a VM's BIOS UUID, the one in a CAPV providerID.
	AttrUUID Attribute = "uuid"
	// AttrIP is a node's address when it was resolved.
	AttrIP Attribute = "ip"
	// AttrEtcdCluster names the etcd cluster a control-plane object's
	// member belongs to (namespace/KubeadmControlPlane, kind/CLUSTER), and
	// AttrEtcdMembers how many members it has: the engine keeps faults
	// within quorum with them.
	AttrEtcdCluster Attribute = "etcdCluster"
	AttrEtcdMembers Attribute = "etcdMembers"
)

// The roles of AttrRole.
const (
	RoleControlPlane = "control-plane"
	RoleWorker       = "worker"
)

// RequireControlPlane returns an error unless obj is a control-plane node,
// for the faults and probes that act on what only control planes run
// (static pods, etcd); what names it ("static pods", "etcd").
func RequireControlPlane(obj Object, what string) error {
	if role := obj.Attributes[AttrRole]; role != RoleControlPlane {
		return fmt.Errorf("%s is a %s: only control-plane nodes run %s", obj, orUnknown(role), what)
	}
	return nil
}

func orUnknown(role string) string {
	if role == "" {
		return "node of no known role"
	}
	return role
}

// Selector says which objects a target matches. Fields combine with AND.
type Selector struct {
	// Role is control-plane or worker (CAPI Machines, kind nodes).
	Role string `yaml:"role"`
	// Cluster is the CAPI Cluster, as namespace/name or name.
	Cluster string `yaml:"cluster"`
	// MachineDeployment selects the Machines of one MachineDeployment.
	MachineDeployment string `yaml:"machineDeployment"`
	// ControlPlane selects the Machines of one KubeadmControlPlane.
	ControlPlane string `yaml:"controlPlane"`
	// NodeName and NodeLabels select by the workload cluster's Node.
	NodeName   string            `yaml:"nodeName"`
	NodeLabels map[string]string `yaml:"nodeLabels"`
	// VM is a vSphere inventory name or path; it may hold * and ? globs.
	VM string `yaml:"vm"`
	// UUID is a VM's BIOS UUID.
	UUID string `yaml:"uuid"`
	// ProviderID is a CAPI Machine.spec.providerID (vsphere://<uuid>).
	ProviderID string `yaml:"providerID"`
	// Host is an ESXi host's name in vCenter: the Machines (the vsphere
	// provider: the VMs) whose VMs run on it now.
	Host string `yaml:"host"`
}

// PowerState is a VM's power state, in vSphere's words. Providers whose
// nodes are containers map their states onto them: running is PoweredOn,
// stopped PoweredOff, paused Suspended.
type PowerState string

// The power states of a VM.
const (
	PoweredOn  PowerState = "poweredOn"
	PoweredOff PowerState = "poweredOff"
	Suspended  PowerState = "suspended"
)

// VMPower changes and reads the power state of VMs. Every call waits for the
// change to finish (the vSphere task, the container) or ctx to end.
type VMPower interface {
	// PowerOn starts a VM that is off or suspended.
	PowerOn(ctx context.Context, vm Object) error
	// PowerOff is a hard power-off, like pulling the plug.
	PowerOff(ctx context.Context, vm Object) error
	// ShutdownGuest asks the guest OS to shut down; it returns once the
	// request is accepted, not when the VM is off.
	ShutdownGuest(ctx context.Context, vm Object) error
	// Reset is a hard reset: off and on again without a guest shutdown.
	Reset(ctx context.Context, vm Object) error
	// Suspend freezes the VM with its memory kept.
	Suspend(ctx context.Context, vm Object) error
	// PowerState reads the VM's power state now.
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
	// SetNICConnected connects or disconnects the adapter; doing what is
	// already so is not an error.
	SetNICConnected(ctx context.Context, vm Object, nic string, connected bool) error
	// NICConnected reads whether the adapter is connected.
	NICConnected(ctx context.Context, vm Object, nic string) (bool, error)
}

// VMInfo is one VM of a vCenter inventory.
type VMInfo struct {
	Name string
	// UUID is the BIOS UUID, the one in a CAPV providerID.
	UUID       string
	PowerState PowerState
	// Host is the ESXi host the VM runs on (its name in vCenter), "" when
	// vCenter does not say.
	Host string
}

// Inventory lists a vCenter's VMs, read-only, for the inventory check
// (orphan VMs, Machines without a VM).
type Inventory interface {
	// ListVMs returns every VM of the inventory, in one read.
	ListVMs(ctx context.Context) ([]VMInfo, error)
}

// StaticPodComponents are the control-plane static pods kubeadm writes.
var StaticPodComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// NodeKubelet stops and starts the kubelet of a node, as `systemctl stop
// kubelet` on the host would. The node's static pods keep running. The lab
// and kind implement it; vSphere through VMware Tools guest operations,
// given a guest login.
type NodeKubelet interface {
	// SetKubelet stops (running false) or starts the kubelet of m's node.
	SetKubelet(ctx context.Context, m Object, running bool) error
}

// NodeStaticPods stops and starts the control-plane static pods of a node,
// as moving a manifest out of /etc/kubernetes/manifests and back would.
// component is one of StaticPodComponents; m must be a control plane
// (RequireControlPlane).
type NodeStaticPods interface {
	// SetStaticPod moves the component's manifest out (running false) or
	// back; the kubelet stops or starts the pod on its own time.
	SetStaticPod(ctx context.Context, m Object, component string, running bool) error
	// StaticPodRunning tells whether the component runs on the node now:
	// the kubelet stops it some seconds after its manifest is moved.
	StaticPodRunning(ctx context.Context, m Object, component string) (bool, error)
}

// SimulatedNodes is implemented by a provider whose nodes faultline plays
// itself (the lab's node simulator): a scenario may hold a state there
// that real nodes heal or never reach. A provider that has simulated
// nodes only in some set-ups says when through CapabilityCondition.
type SimulatedNodes interface {
	SimulatesNodes()
}

// Nodes reads the Kubernetes Node behind a target and tells whether the
// target's cluster API server answers, for providers with no Cluster API
// Machines (kind's node containers). A ClusterAPI provider has it through
// its Machines (NodesOf).
type Nodes interface {
	// NodeOf reads obj's Node: the Node, NodeReady, NodeMessage and Stamps
	// fields of a MachineState. Gone is set when obj itself is gone.
	NodeOf(ctx context.Context, obj Object) (MachineState, error)
	// APIServer tells whether obj's cluster API server answers a read;
	// the error says why not.
	APIServer(ctx context.Context, obj Object) error
}

// ClusterAPI reads Cluster API state about the Machines a target resolved
// to, and about their workload cluster. Objects passed in are Machines from
// Resolve.
type ClusterAPI interface {
	// Machine reads the Machine's current state; a Machine that no longer
	// exists is a MachineState with Gone set, not an error.
	Machine(ctx context.Context, m Object) (MachineState, error)
	// Replacements lists the Machines of m's owner (MachineSet of a
	// MachineDeployment, or KubeadmControlPlane) that did not exist when m
	// was resolved.
	Replacements(ctx context.Context, m Object) ([]MachineState, error)
	// Owner reads the desired and the healthy replica count of m's owner.
	Owner(ctx context.Context, m Object) (OwnerState, error)
	// APIServer tells whether m's workload cluster API server answers a
	// read; the error says why not.
	APIServer(ctx context.Context, m Object) error
}

// MachineReader is a ClusterAPI that can read a Machine without its Node,
// making no request to the workload cluster, so that probes about the
// Machine itself keep their cadence while the workload API hangs.
type MachineReader interface {
	// MachineOnly is Machine with the Node's fields left empty.
	MachineOnly(ctx context.Context, m Object) (MachineState, error)
}

// MachineState is one reading of a Machine and its Node.
type MachineState struct {
	Name string
	Gone bool
	// Phase is Machine.status.phase (Provisioning, Running, Deleting...).
	Phase string
	// Deleting is set once the Machine has a deletionTimestamp.
	Deleting bool
	// Unhealthy: a MachineHealthCheck or KCP found it unhealthy and asked
	// for remediation (HealthCheckSucceeded=False or OwnerRemediated).
	Unhealthy bool
	// Node is the Machine's Node name, NodeReady its Ready condition
	// ("True", "False", "Unknown", or "" when there is no Node) and
	// NodeMessage the condition's message.
	Node        string
	NodeReady   string
	NodeMessage string
	// EtcdHealthy is the EtcdMemberHealthy condition of a control-plane
	// Machine ("" on workers).
	EtcdHealthy string
	// DeletingMessage says what a deleting Machine waits for (its
	// Deleting condition).
	DeletingMessage string
	// Stamps are the objects' own timestamps (creationTimestamp,
	// deletionTimestamp, the Ready condition's lastTransitionTime), recorded
	// beside the time faultline observed the change.
	Stamps map[string]time.Time
}

// OwnerState is one reading of a MachineDeployment or KubeadmControlPlane.
type OwnerState struct {
	Kind, Name string
	Desired    int
	// Healthy counts Machines that are Running, not deleting, with a
	// Ready Node.
	Healthy  int
	Deleting int
	// DeletingWhy names each deleting Machine and what it waits for.
	DeletingWhy []string
	// EtcdHealthy counts control-plane Machines, not deleting, whose etcd
	// member KCP reports healthy.
	EtcdHealthy int
}

// Objects reads any Kubernetes object of the management cluster or of a
// target's workload cluster, for conditions on kinds faultline has no named
// probe for (a TanzuKubernetesCluster, a Calico IPPool, an MHC's status).
type Objects interface {
	// GetObject reads the object ref names, in the cluster ref.Cluster
	// names; scope is the target object whose workload cluster "workload"
	// means. A missing object is nil, not an error.
	GetObject(ctx context.Context, scope Object, ref ObjectRef) (map[string]any, error)
	// ListObjects lists the objects of ref's kind, in ref's namespace when
	// it names one; ref.Name is ignored.
	ListObjects(ctx context.Context, scope Object, ref ObjectRef) ([]map[string]any, error)
}

// ObjectRef names one object.
type ObjectRef struct {
	// Cluster is "management" or "workload".
	Cluster    string
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

func (r ObjectRef) String() string {
	s := r.Kind + " " + r.Name
	if r.Namespace != "" {
		s = r.Kind + " " + r.Namespace + "/" + r.Name
	}
	return s + " (" + r.Cluster + " cluster)"
}

// ObjectWriter creates, replaces and deletes Kubernetes objects of the
// management cluster or of a target's workload cluster: the faults that are
// API objects (a webhook configuration, an IPPool) and the runbooks that
// remove them. The engine journals every write with a backup first.
type ObjectWriter interface {
	// ApplyObject creates obj, or replaces the object of that name.
	ApplyObject(ctx context.Context, scope Object, cluster string, obj map[string]any) error
	// DeleteObject deletes the object ref names; a missing one is not an
	// error.
	DeleteObject(ctx context.Context, scope Object, ref ObjectRef) error
	// DryRunCreate asks the API server whether it would create obj
	// (admission webhooks included) without storing it.
	DryRunCreate(ctx context.Context, scope Object, cluster string, obj map[string]any) error
}

// Watcher is optional: it notifies when an object may have changed, so waits
// react at once instead of at the next poll. The channel is closed when ctx
// ends or the watch breaks; waits then fall back to polling.
type Watcher interface {
	Watch(ctx context.Context, obj Object) (<-chan struct{}, error)
}
