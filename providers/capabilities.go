package providers

import (
	"context"
	"fmt"
	"strings"
)

// Capability names a group of faults and probes a provider may offer, as a
// scenario's spec.requires names it.
type Capability string

// The capabilities, each the name of its interface in this package.
const (
	CapVMPower        Capability = "VMPower"
	CapVMLifecycle    Capability = "VMLifecycle"
	CapVMNetwork      Capability = "VMNetwork"
	CapClusterAPI     Capability = "ClusterAPI"
	CapObjects        Capability = "Objects"
	CapNodeKubelet    Capability = "NodeKubelet"
	CapNodeStaticPods Capability = "NodeStaticPods"
	CapEtcdLeadership Capability = "EtcdLeadership"
	CapEtcdMembers    Capability = "EtcdMembers"
	// CapObjectWrites is ObjectWriter's. Its faults read objects too, so a
	// scenario that uses them also requires Objects.
	CapObjectWrites Capability = "ObjectWrites"
	// CapNodes is Nodes'; a ClusterAPI provider has it through its
	// Machines.
	CapNodes Capability = "Nodes"
	// CapSimulatedNodes is SimulatedNodes': a scenario whose spec.lab says
	// it cannot run on real nodes (simulatedOnly) requires it.
	CapSimulatedNodes Capability = "SimulatedNodes"
	// CapManagementUpgrade is ManagementUpgrade's.
	CapManagementUpgrade Capability = "ManagementUpgrade"
	// CapWorkloads is Workloads'. Deploying a workload writes and reads
	// objects, so a provider with it has Objects and ObjectWrites too.
	CapWorkloads Capability = "Workloads"
	// CapHosts is Hosts'.
	CapHosts Capability = "Hosts"
	// CapVCenterReach is VCenterReach's.
	CapVCenterReach Capability = "VCenterReach"
)

// capabilities ties each capability to the test of its interface: the one
// list both the known names and HasCapability derive from.
var capabilities = []struct {
	name       Capability
	implements func(Provider) bool
}{
	{CapVMPower, implements[VMPower]},
	{CapVMLifecycle, implements[VMLifecycle]},
	{CapVMNetwork, implements[VMNetwork]},
	{CapClusterAPI, implements[ClusterAPI]},
	{CapObjects, implements[Objects]},
	{CapNodeKubelet, implements[NodeKubelet]},
	{CapNodeStaticPods, implements[NodeStaticPods]},
	{CapEtcdLeadership, implements[EtcdLeadership]},
	{CapEtcdMembers, implements[EtcdMembers]},
	{CapObjectWrites, implements[ObjectWriter]},
	{CapNodes, func(p Provider) bool { return implements[Nodes](p) || implements[ClusterAPI](p) }},
	{CapSimulatedNodes, implements[SimulatedNodes]},
	{CapManagementUpgrade, implements[ManagementUpgrade]},
	{CapWorkloads, implements[Workloads]},
	{CapHosts, implements[Hosts]},
	{CapVCenterReach, implements[VCenterReach]},
}

func implements[T any](p Provider) bool {
	_, ok := p.(T)
	return ok
}

// Capabilities lists every capability, in the order of the list above.
func Capabilities() []Capability {
	out := make([]Capability, len(capabilities))
	for i, c := range capabilities {
		out[i] = c.name
	}
	return out
}

// KnownCapability reports whether c names a capability.
func KnownCapability(c Capability) bool {
	for _, k := range capabilities {
		if k.name == c {
			return true
		}
	}
	return false
}

// CapabilityList is every capability name, comma-separated, for messages.
func CapabilityList() string {
	names := make([]string, len(capabilities))
	for i, c := range capabilities {
		names[i] = string(c.name)
	}
	return strings.Join(names, ", ")
}

// CapabilityCondition is implemented by a provider whose capabilities
// depend on how it was set up: the vSphere provider runs node faults only
// when given a guest login.
type CapabilityCondition interface {
	// CapabilityUnavailable returns why c cannot be used now (an error
	// that wraps ErrUnsupported), or nil when it can.
	CapabilityUnavailable(c Capability) error
}

// Preflighter is implemented by a provider that can tell, changing
// nothing, whether a fault of capability c on obj would reach what it
// acts on (a Machine's VM in its vCenter): the engine asks before the
// first fault, and in a dry run, so that a dry run fails where the real
// run would.
type Preflighter interface {
	// Preflight returns why a fault of c on obj could not be applied, or
	// nil. It reads only.
	Preflight(ctx context.Context, c Capability, obj Object) error
}

// HasCapability reports whether p implements the interface behind c and,
// for a CapabilityCondition, can use it.
func HasCapability(p Provider, c Capability) bool {
	for _, k := range capabilities {
		if k.name == c {
			return k.implements(p) && unavailable(p, c) == nil
		}
	}
	return false
}

func unavailable(p Provider, c Capability) error {
	if cc, ok := p.(CapabilityCondition); ok {
		return cc.CapabilityUnavailable(c)
	}
	return nil
}

// Unsupported is the error for a provider that lacks c, or cannot use it
// as configured; it wraps ErrUnsupported.
func Unsupported(p Provider, c Capability) error {
	err := unavailable(p, c)
	if err == nil {
		err = ErrUnsupported
	}
	return Lacks(p.Name(), c, err)
}

// Lacks is the error for the provider named name lacking c because of
// why, which wraps ErrUnsupported: Unsupported's, for a provider known
// before it is opened.
func Lacks(name string, c Capability, why error) error {
	return fmt.Errorf("provider %s lacks capability %s: %w", name, c, why)
}

// As returns p as the interface T behind capability c, or Unsupported.
func As[T any](p Provider, c Capability) (T, error) {
	v, ok := p.(T)
	if !ok || unavailable(p, c) != nil {
		return v, Unsupported(p, c)
	}
	return v, nil
}

// NodesOf is the Nodes view of p: its own, or its ClusterAPI's Machines.
func NodesOf(p Provider) (Nodes, error) {
	if c, ok := p.(ClusterAPI); ok {
		return machineNodes{c}, nil
	}
	return As[Nodes](p, CapNodes)
}

// machineNodes reads a Machine's Node through ClusterAPI.
type machineNodes struct{ ClusterAPI }

func (m machineNodes) NodeOf(ctx context.Context, obj Object) (MachineState, error) {
	return m.Machine(ctx, obj)
}
