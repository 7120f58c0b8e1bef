package vsphere

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
)

var _ providers.Hosts = (*Provider)(nil)

// HostOf implements providers.Hosts: the host vm runs on, with the VMs
// powered on there now, which are also what its failure takes down.
func (p *Provider) HostOf(ctx context.Context, vm providers.Object) (providers.Object, []providers.Object, error) {
	var v mo.VirtualMachine
	if err := property.DefaultCollector(p.client).RetrieveOne(ctx, p.vm(vm).Reference(), []string{"runtime.host"}, &v); err != nil {
		return providers.Object{}, nil, fmt.Errorf("host of vm %q: %w", vm.Name, describe(err))
	}
	if v.Runtime.Host == nil {
		return providers.Object{}, nil, fmt.Errorf("vm %q runs on no host vCenter names: %w", vm.Name, providers.ErrNotFound)
	}
	var h mo.HostSystem
	if err := property.DefaultCollector(p.client).RetrieveOne(ctx, *v.Runtime.Host, []string{"name"}, &h); err != nil {
		return providers.Object{}, nil, fmt.Errorf("host of vm %q: %w", vm.Name, describe(err))
	}
	on, err := p.poweredOnAt(ctx, h.Self)
	if err != nil {
		return providers.Object{}, nil, fmt.Errorf("vms on host %q: %w", h.Name, err)
	}
	ids := make([]string, len(on))
	for i, o := range on {
		ids[i] = o.ID
	}
	host := providers.Object{Kind: "HostSystem", Name: h.Name, ID: h.Self.Value, Attributes: map[providers.Attribute]string{providers.AttrVMs: strings.Join(ids, ",")}}
	return host, on, nil
}

// poweredOnAt are the VMs powered on on host, templates left out, as
// objects (name and BIOS UUID), sorted by name.
func (p *Provider) poweredOnAt(ctx context.Context, host types.ManagedObjectReference) ([]providers.Object, error) {
	vms, err := p.vmsAt(ctx, host)
	if err != nil {
		return nil, err
	}
	var on []types.ManagedObjectReference
	for _, vm := range vms {
		if vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn && (vm.Config == nil || !vm.Config.Template) {
			on = append(on, vm.Self)
		}
	}
	return p.objects(ctx, on)
}

// vmsAt are the VMs whose runtime.host is host, read through one container
// view of the datacenter: a host's own list of VMs can name one being
// created or deleted, which a read of it then fails on.
func (p *Provider) vmsAt(ctx context.Context, host types.ManagedObjectReference) ([]mo.VirtualMachine, error) {
	all, err := p.viewVMs(ctx, "runtime.host", "runtime.powerState", "config.template")
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(vm mo.VirtualMachine) bool { return vm.Runtime.Host == nil || *vm.Runtime.Host != host }), nil
}

// viewVMs reads props of every VM of the datacenter through one container
// view, made and destroyed for the read (ListVMs, vmsAt).
func (p *Provider) viewVMs(ctx context.Context, props ...string) ([]mo.VirtualMachine, error) {
	v, err := view.NewManager(p.client).CreateContainerView(ctx, p.dc.Reference(), []string{"VirtualMachine"}, true)
	if err != nil {
		return nil, describe(err)
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var vms []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, props, &vms); err != nil {
		return nil, describe(err)
	}
	return vms, nil
}

// FailHost implements providers.Hosts: every VM of vms powered off hard at
// once (their tasks all started before any is waited on), then the host
// disconnected. A VM already off or gone is no error: the host's failure
// would have found it so.
func (p *Provider) FailHost(ctx context.Context, host providers.Object, vms []string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(vms))
	for i, id := range vms {
		wg.Go(func() {
			vm := providers.Object{Kind: "VirtualMachine", Name: id, ID: id}
			err := p.PowerOff(ctx, vm)
			if isFault(err, "InvalidPowerState") || isNotFound(err) {
				err = nil
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fail host %q: %w", host.Name, err)
	}
	h := object.NewHostSystem(p.client, p.hostRef(host))
	return p.task(ctx, "disconnect", host, func(ctx context.Context) (*object.Task, error) { return h.Disconnect(ctx) })
}

// RestoreHost implements providers.Hosts: the host connected again, then
// each VM of vms that is still powered off powered on where it is now.
func (p *Provider) RestoreHost(ctx context.Context, host providers.Object, vms []string) error {
	return p.RestoreHostKeeping(ctx, host, vms, nil)
}

// RestoreHostKeeping is RestoreHost that leaves off each VM keepOff says
// an operator would not start (a VM whose Machine is being deleted);
// keepOff gets the VM with its BIOS UUID.
func (p *Provider) RestoreHostKeeping(ctx context.Context, host providers.Object, vms []string, keepOff func(providers.Object) bool) error {
	st, err := p.HostState(ctx, host)
	if err != nil {
		return fmt.Errorf("restore host %q: %w", host.Name, err)
	}
	if st.ConnectionState != types.HostSystemConnectionStateConnected {
		hs := object.NewHostSystem(p.client, p.hostRef(host))
		err := p.task(ctx, "reconnect", host, func(ctx context.Context) (*object.Task, error) {
			return hs.Reconnect(ctx, nil, nil)
		})
		if err != nil {
			return err
		}
	}
	return p.powerOnKeeping(ctx, vms, keepOff)
}

// powerOnKeeping powers on each VM of vms that is powered off, but those
// keepOff says to leave off; a VM gone is no error.
func (p *Provider) powerOnKeeping(ctx context.Context, vms []string, keepOff func(providers.Object) bool) error {
	var errs []error
	for _, id := range slices.Sorted(slices.Values(vms)) {
		vm := providers.Object{Kind: "VirtualMachine", Name: id, ID: id}
		if keepOff != nil {
			objs, err := p.objects(ctx, []types.ManagedObjectReference{p.vm(vm).Reference()})
			if err != nil && !isNotFound(err) {
				errs = append(errs, err)
				continue
			}
			if len(objs) == 1 && keepOff(objs[0]) {
				continue
			}
		}
		st, err := p.PowerState(ctx, vm)
		switch {
		case isNotFound(err):
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		case st == providers.PoweredOn:
			continue
		}
		if err := p.PowerOn(ctx, vm); err != nil && !isFault(err, "InvalidPowerState") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// HostState reads host's runtime: whether vCenter reaches it
// (ConnectionState) and whether it is in maintenance mode.
func (p *Provider) HostState(ctx context.Context, host providers.Object) (types.HostRuntimeInfo, error) {
	var h mo.HostSystem
	if err := property.DefaultCollector(p.client).RetrieveOne(ctx, p.hostRef(host), []string{"runtime"}, &h); err != nil {
		return types.HostRuntimeInfo{}, describe(err)
	}
	return h.Runtime, nil
}

func (p *Provider) hostRef(host providers.Object) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "HostSystem", Value: host.ID}
}

// EnterMaintenance implements providers.Hosts: each VM of vms still on the
// host and powered on migrated (vMotion) to the connected host of its
// cluster with the fewest VMs, not in maintenance, or shut down (its guest,
// then powered off) where there is none; then maintenance mode.
func (p *Provider) EnterMaintenance(ctx context.Context, host providers.Object, vms []string) error {
	ref := p.hostRef(host)
	var errs []error
	for _, id := range vms {
		vm := providers.Object{Kind: "VirtualMachine", Name: id, ID: id}
		var v mo.VirtualMachine
		err := property.DefaultCollector(p.client).RetrieveOne(ctx, p.vm(vm).Reference(), []string{"name", "runtime.host", "runtime.powerState"}, &v)
		switch {
		case isNotFound(describe(err)):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("vm %s: %w", id, describe(err)))
			continue
		case v.Runtime.Host == nil || *v.Runtime.Host != ref || v.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn:
			continue // moved or stopped since
		}
		vm.Name = v.Name
		to, err := p.evacuationTarget(ctx, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if to == nil {
			if err := p.PowerOff(ctx, vm); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		err = p.task(ctx, "migrate", vm, func(ctx context.Context) (*object.Task, error) {
			return p.vm(vm).Relocate(ctx, types.VirtualMachineRelocateSpec{Host: to}, types.VirtualMachineMovePriorityDefaultPriority)
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evacuate host %q: %w", host.Name, err)
	}
	h := object.NewHostSystem(p.client, ref)
	return p.task(ctx, "enter maintenance mode on", host, func(ctx context.Context) (*object.Task, error) {
		return h.EnterMaintenanceMode(ctx, 0, false, nil)
	})
}

// evacuationTarget is the host a VM of from goes to: the connected host of
// from's cluster with the fewest VMs, not in maintenance; nil when there
// is none (a standalone host, or every other host down).
func (p *Provider) evacuationTarget(ctx context.Context, from types.ManagedObjectReference) (*types.ManagedObjectReference, error) {
	var h mo.HostSystem
	if err := property.DefaultCollector(p.client).RetrieveOne(ctx, from, []string{"parent"}, &h); err != nil {
		return nil, describe(err)
	}
	if h.Parent == nil || h.Parent.Type != "ClusterComputeResource" {
		return nil, nil
	}
	var cluster mo.ClusterComputeResource
	if err := property.DefaultCollector(p.client).RetrieveOne(ctx, *h.Parent, []string{"host"}, &cluster); err != nil {
		return nil, describe(err)
	}
	var hosts []mo.HostSystem
	if err := property.DefaultCollector(p.client).Retrieve(ctx, cluster.Host, []string{"name", "vm", "runtime.connectionState", "runtime.inMaintenanceMode"}, &hosts); err != nil {
		return nil, describe(err)
	}
	var best *mo.HostSystem
	for i, c := range hosts {
		if c.Self == from || c.Runtime.ConnectionState != types.HostSystemConnectionStateConnected || c.Runtime.InMaintenanceMode {
			continue
		}
		if best == nil || len(c.Vm) < len(best.Vm) || len(c.Vm) == len(best.Vm) && c.Name < best.Name {
			best = &hosts[i]
		}
	}
	if best == nil {
		return nil, nil
	}
	return &best.Self, nil
}

// ExitMaintenance implements providers.Hosts.
func (p *Provider) ExitMaintenance(ctx context.Context, host providers.Object, vms []string) error {
	return p.ExitMaintenanceKeeping(ctx, host, vms, nil)
}

// ExitMaintenanceKeeping is ExitMaintenance with RestoreHostKeeping's
// keepOff.
func (p *Provider) ExitMaintenanceKeeping(ctx context.Context, host providers.Object, vms []string, keepOff func(providers.Object) bool) error {
	st, err := p.HostState(ctx, host)
	if err != nil {
		return fmt.Errorf("exit maintenance on host %q: %w", host.Name, err)
	}
	if st.InMaintenanceMode {
		hs := object.NewHostSystem(p.client, p.hostRef(host))
		err := p.task(ctx, "exit maintenance mode on", host, func(ctx context.Context) (*object.Task, error) {
			return hs.ExitMaintenanceMode(ctx, 0)
		})
		if err != nil {
			return err
		}
	}
	return p.powerOnKeeping(ctx, vms, keepOff)
}
