package vcsim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// hostRules is the simulator's method hook (Registry.Handler) with the
// host behaviour vcsim lacks, which a host fault needs:
//   - placement as DRS makes it: a VM cloned with no host named lands on
//     a connected host of the resource pool's cluster, not in maintenance
//     (placeIn; vcsim puts every clone on its template's host, so every
//     lab VM shared one host);
//   - a guest shutdown that takes time (slowShutdown);
//   - a task on a VM refused while one of its own runs (taskInProgress);
//   - a VM on a host that is not connected refuses every operation, as
//     vCenter does (HostNotConnected; HostNotReachable while the host is
//     not responding): CAPV cannot power on, reconfigure or delete it
//     until the host is back. Templates are left usable, as a content
//     library's are.
func (v *Sim) hostRules(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	if m.This.Type != "VirtualMachine" {
		return nil, nil
	}
	vm, ok := ctx.Map.Get(m.This).(*simulator.VirtualMachine)
	if !ok {
		return nil, nil
	}
	var template bool
	var host *types.ManagedObjectReference
	ctx.WithLock(vm, func() {
		template = vm.Config != nil && vm.Config.Template
		host = vm.Runtime.Host
	})
	if clone, ok := m.Body.(*types.CloneVM_Task); ok && clone.Spec.Location.Host == nil && clone.Spec.Location.Pool != nil {
		var extra []types.BaseOptionValue
		if clone.Spec.Config != nil {
			extra = clone.Spec.Config.ExtraConfig
		}
		group, pl := v.placementOf(groupOf(extra))
		v.remember(clone.Name, group)
		if h := v.placeIn(ctx, *clone.Spec.Location.Pool, nil, group, pl); h != nil {
			clone.Spec.Location.Host = h
		}
	}
	if template || host == nil {
		return nil, nil
	}
	if f := hostDown(ctx, *host); f != nil {
		return nil, f
	}
	if v.taskTime > 0 {
		if f := taskInProgress(ctx, m, vm); f != nil {
			return nil, f
		}
	}
	if move, ok := m.Body.(*types.RelocateVM_Task); ok && move.Spec.Host != nil && *move.Spec.Host != *host {
		moveBetweenHosts(ctx, m.This, *host, *move.Spec.Host)
	}
	if _, ok := m.Body.(*types.ShutdownGuest); ok && v.shutdown > 0 {
		// The simulator calls the object This names, read again after
		// this hook: a guest of the VM's own, registered once.
		guest := types.ManagedObjectReference{Type: guestType, Value: m.This.Value}
		if ctx.Map.Get(guest) == nil {
			ctx.Map.Put(&slowShutdown{self: guest, vm: vm, after: v.shutdown})
		}
		m.This = guest
	}
	return nil, nil
}

// hostDown is the fault vCenter answers an operation on a VM of host with
// while host is not connected; nil while it is.
func hostDown(ctx *simulator.Context, host types.ManagedObjectReference) types.BaseMethodFault {
	switch hostState(ctx, host) {
	case types.HostSystemConnectionStateDisconnected:
		return &types.HostNotConnected{}
	case types.HostSystemConnectionStateNotResponding:
		return &types.HostNotReachable{}
	}
	return nil
}

// moveBetweenHosts moves vm from one host's list of VMs to another's:
// vcsim's relocate leaves it in its old host's list and out of the new
// one's, and HostOf and placement read them.
func moveBetweenHosts(ctx *simulator.Context, vm, from, to types.ManagedObjectReference) {
	if src, ok := ctx.Map.Get(from).(*simulator.HostSystem); ok {
		ctx.Map.RemoveReference(ctx, src, &src.Vm, vm)
	}
	if dest, ok := ctx.Map.Get(to).(*simulator.HostSystem); ok {
		ctx.Map.AddReference(ctx, dest, &dest.Vm, vm)
	}
}

// The placement policies of SetPlacement.
const (
	// Spread puts each VM of a group on the host with the fewest of the
	// group's VMs (a DRS anti-affinity rule).
	Spread = "spread"
	// Together puts them on the host with the most of them.
	Together = "together"
)

// Placement is where a group of VMs goes (SetPlacement).
type Placement struct {
	// Policy is Spread or Together; "" places them as any other VM: on
	// the host with the fewest VMs, as DRS balances a cluster.
	Policy string
	// Hosts, when above 0, keeps the group on the first Hosts hosts of
	// the cluster by name (a DRS VM-Host rule's host group), while one of
	// them is up.
	Hosts int
}

// PlacementKey is the VMX key (a clone's extraConfig, as CAPV sets a
// machine template's customVMXKeys) that names a VM's placement group.
const PlacementKey = "guestinfo.faultline.placement"

// SetPlacement places the VMs of group (PlacementKey's value: the lab's
// control planes of one cluster) as p says; the zero Placement forgets
// the group.
func (v *Sim) SetPlacement(group string, p Placement) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if p == (Placement{}) {
		delete(v.placement, group)
		return
	}
	v.placement[group] = p
}

// placementOf is group's placement; "" and the zero Placement for a group
// none was set for.
func (v *Sim) placementOf(group string) (string, Placement) {
	v.mu.Lock()
	defer v.mu.Unlock()
	pl, ok := v.placement[group]
	if !ok {
		return "", Placement{}
	}
	return group, pl
}

// remember records the group of the VM named name: vcsim's clone drops
// the extraConfig it is given, so the group is known only from the clone's
// request.
func (v *Sim) remember(name, group string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if group == "" {
		delete(v.groups, name)
		return
	}
	v.groups[name] = group
}

// groupNamed is the group of the VM named name.
func (v *Sim) groupNamed(name string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.groups[name]
}

// groupOf is PlacementKey's value in extra.
func groupOf(extra []types.BaseOptionValue) string {
	for _, o := range extra {
		if ov := o.GetOptionValue(); ov.Key == PlacementKey {
			if s, ok := ov.Value.(string); ok {
				return s
			}
		}
	}
	return ""
}

// hostState is ref's connection state.
func hostState(ctx *simulator.Context, ref types.ManagedObjectReference) types.HostSystemConnectionState {
	h, ok := ctx.Map.Get(ref).(*simulator.HostSystem)
	if !ok {
		return ""
	}
	var st types.HostSystemConnectionState
	ctx.WithLock(h, func() { st = h.Runtime.ConnectionState })
	return st
}

// placeIn picks the host for a VM of pool, of the connected hosts of the
// pool's cluster not in maintenance and not skip: by pl for the VMs of
// group, then the one with the fewest VMs, then the first by name. nil
// when there is none.
func (v *Sim) placeIn(ctx *simulator.Context, pool types.ManagedObjectReference, skip *types.ManagedObjectReference, group string, pl Placement) *types.ManagedObjectReference {
	rp, ok := ctx.Map.Get(pool).(*simulator.ResourcePool)
	if !ok {
		return nil
	}
	var owner types.ManagedObjectReference
	ctx.WithLock(rp, func() { owner = rp.Owner })
	cr, ok := ctx.Map.Get(owner).(*simulator.ClusterComputeResource)
	if !ok {
		return nil
	}
	var candidates []types.ManagedObjectReference
	ctx.WithLock(cr, func() { candidates = slices.Clone(cr.Host) })
	type load struct {
		ref        types.ManagedObjectReference
		name       string
		vms, group int
	}
	var hosts []load
	for _, ref := range candidates {
		h, ok := ctx.Map.Get(ref).(*simulator.HostSystem)
		if !ok || (skip != nil && ref == *skip) {
			continue
		}
		var vms []types.ManagedObjectReference
		l := load{ref: ref}
		var usable bool
		ctx.WithLock(h, func() {
			usable = h.Runtime.ConnectionState == types.HostSystemConnectionStateConnected && !h.Runtime.InMaintenanceMode
			l.name, vms = h.Name, slices.Clone(h.Vm)
		})
		if !usable {
			continue
		}
		l.vms = len(vms)
		if group != "" {
			l.group = v.countGroup(ctx, vms, group)
		}
		hosts = append(hosts, l)
	}
	if len(hosts) == 0 {
		return nil
	}
	if pl.Hosts > 0 {
		// The host group: the first pl.Hosts of the cluster's hosts by
		// name; outside it only when none of it is up.
		group := hostNames(ctx, candidates)[:min(pl.Hosts, len(candidates))]
		if in := slices.DeleteFunc(slices.Clone(hosts), func(l load) bool { return !slices.Contains(group, l.name) }); len(in) > 0 {
			hosts = in
		}
	}
	policy := pl.Policy
	best := slices.MinFunc(hosts, func(a, b load) int {
		switch {
		case policy == Spread && a.group != b.group:
			return a.group - b.group
		case policy == Together && a.group != b.group:
			return b.group - a.group
		case pl.Hosts > 0:
			// A host group fills by name: which host holds the most
			// of the group is known beforehand.
			return strings.Compare(a.name, b.name)
		case a.vms != b.vms:
			return a.vms - b.vms
		}
		return strings.Compare(a.name, b.name)
	})
	return &best.ref
}

// hostNames are the names of refs, sorted.
func hostNames(ctx *simulator.Context, refs []types.ManagedObjectReference) []string {
	var names []string
	for _, ref := range refs {
		if h, ok := ctx.Map.Get(ref).(*simulator.HostSystem); ok {
			ctx.WithLock(h, func() { names = append(names, h.Name) })
		}
	}
	slices.Sort(names)
	return names
}

// countGroup counts the VMs of refs in group.
func (v *Sim) countGroup(ctx *simulator.Context, refs []types.ManagedObjectReference, group string) int {
	n := 0
	for _, ref := range refs {
		vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
		if !ok {
			continue
		}
		var name string
		ctx.WithLock(vm, func() { name = vm.Name })
		if v.groupNamed(name) == group {
			n++
		}
	}
	return n
}

// RestartElsewhere is vSphere HA's restart of a VM whose host failed: the
// VM is registered on the host placement picks among the others of its
// cluster and powered on there, and vCenter shows HA's event ("vSphere HA
// restarted virtual machine"). It acts in process, as HA does, not
// through vCenter's API (which refuses a VM on a host that is down). It
// returns the new host's name, or "" when there is nothing to restart: the
// VM is gone or powered on, or its host is connected again.
func (v *Sim) RestartElsewhere(ref types.ManagedObjectReference) (string, error) {
	base := v.model.Service.Context
	ctx := &simulator.Context{Context: context.Background(), Map: base.Map, Session: base.Session}
	vm, ok := base.Map.Get(ref).(*simulator.VirtualMachine)
	if !ok {
		return "", nil
	}
	var from, pool *types.ManagedObjectReference
	var name string
	var power types.VirtualMachinePowerState
	ctx.WithLock(vm, func() { from, pool, name, power = vm.Runtime.Host, vm.ResourcePool, vm.Name, vm.Runtime.PowerState })
	if from == nil || pool == nil {
		return "", fmt.Errorf("vm %s has no host or resource pool", name)
	}
	if power == types.VirtualMachinePowerStatePoweredOn || hostState(ctx, *from) == types.HostSystemConnectionStateConnected {
		return "", nil
	}
	group, pl := v.placementOf(v.groupNamed(name))
	to := v.placeIn(ctx, *pool, from, group, pl)
	if to == nil {
		return "", fmt.Errorf("vm %s: no other connected host in its cluster to restart it on", name)
	}
	if err := runTask(ctx, vm, func() soap.HasFault {
		return vm.RelocateVMTask(ctx, &types.RelocateVM_Task{This: ref, Spec: types.VirtualMachineRelocateSpec{Host: to}})
	}); err != nil {
		return "", fmt.Errorf("restart vm %s elsewhere: relocate: %w", name, err)
	}
	if err := runTask(ctx, vm, func() soap.HasFault { return vm.PowerOnVMTask(ctx, &types.PowerOnVM_Task{This: ref}) }); err != nil {
		return "", fmt.Errorf("restart vm %s elsewhere: power on: %w", name, err)
	}
	dest := base.Map.Get(*to).(*simulator.HostSystem)
	src := base.Map.Get(*from).(*simulator.HostSystem)
	moveBetweenHosts(ctx, ref, *from, *to)
	ev := &types.VmRestartedOnAlternateHostEvent{SourceHost: types.HostEventArgument{EntityEventArgument: types.EntityEventArgument{Name: src.Name}, Host: *from}}
	ev.Vm = &types.VmEventArgument{EntityEventArgument: types.EntityEventArgument{Name: name}, Vm: ref}
	ev.Host = &types.HostEventArgument{EntityEventArgument: types.EntityEventArgument{Name: dest.Name}, Host: *to}
	ev.FullFormattedMessage = fmt.Sprintf("vSphere HA restarted virtual machine %s on host %s (its host %s failed)", name, dest.Name, src.Name)
	base.Map.EventManager().PostEvent(ctx, &types.PostEvent{EventToPost: ev})
	return dest.Name, nil
}

// runTask calls a task method of vm under its lock, as the simulator's
// dispatch does, and waits for the task it starts.
func runTask(ctx *simulator.Context, vm *simulator.VirtualMachine, call func() soap.HasFault) error {
	var res soap.HasFault
	ctx.WithLock(vm, func() { res = call() })
	if f := res.Fault(); f != nil {
		return fmt.Errorf("%s", f.String)
	}
	var ref types.ManagedObjectReference
	switch b := res.(type) {
	case *methods.RelocateVM_TaskBody:
		ref = b.Res.Returnval
	case *methods.PowerOnVM_TaskBody:
		ref = b.Res.Returnval
	default:
		return fmt.Errorf("unexpected answer %T", res)
	}
	t, ok := ctx.Map.Get(ref).(*simulator.Task)
	if !ok {
		return fmt.Errorf("task %s is not in the simulator", ref.Value)
	}
	t.Wait()
	var info types.TaskInfo
	ctx.WithLock(t, func() { info = t.Info })
	if info.State == types.TaskInfoStateError && info.Error != nil {
		return fmt.Errorf("%s", info.Error.LocalizedMessage)
	}
	return nil
}
