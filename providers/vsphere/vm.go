package vsphere

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
)

func (p *Provider) vm(obj providers.Object) *object.VirtualMachine {
	return object.NewVirtualMachine(p.client, types.ManagedObjectReference{Type: "VirtualMachine", Value: obj.ID})
}

// task runs a vSphere task to completion or until ctx ends, and names the VM
// and the fault when it fails.
//
// It waits on a property collector of its own (WaitTask, as Task.Wait
// does): Task.WaitEx shares the session's default collector, and two tasks
// waited on at once, as runs side by side do, took each other's updates;
// in the lab one power-off then waited until the scenario's timeout for a
// task vcsim had long finished.
//
// A wait cut short by ctx is never a success: WaitTask returns nil when
// its context ends (WaitForUpdatesEx), while the task goes on at vCenter,
// queued or running. Then task waits for that task by its reference, up to
// taskSettle, so that what the caller does next (an undo reading the power
// state) reads the state the task left, and returns an error saying how
// the task ended, or that its outcome is unknown.
func (p *Provider) task(ctx context.Context, op string, obj providers.Object, start func(context.Context) (*object.Task, error)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s %q: not started: %w", op, noun(obj), obj.Name, context.Cause(ctx))
	}
	cctx, done := graced(ctx, createGrace)
	t, err := start(cctx)
	done()
	if busy, ok := busyWith(err); ok {
		// vCenter runs one task on a VM at a time and refuses another
		// with TaskInProgress, naming the one that runs (CAPV's, on a
		// VM it reconciles): wait for that one, then ask once more.
		p.log.V(1).Info("vCenter runs another task on the object; waiting for it", "op", op, "object", obj.Name, "task", busy.Value)
		_ = WaitTask(ctx, object.NewTask(p.client, busy))
		if ctx.Err() == nil {
			cctx, done = graced(ctx, createGrace)
			t, err = start(cctx)
			done()
		}
	}
	if err == nil {
		err = WaitTask(ctx, t)
	}
	if ctx.Err() != nil && t != nil {
		return settle(ctx, op, obj, t)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s %q: cut short before vCenter answered with a task: whether it runs one is unknown: %w", op, noun(obj), obj.Name, context.Cause(ctx))
		}
		return fmt.Errorf("%s %s %q: %w", op, noun(obj), obj.Name, describe(err))
	}
	return nil
}

// noun is what obj is in an error: a host, or a VM.
func noun(obj providers.Object) string {
	if obj.Kind == "HostSystem" {
		return "host"
	}
	return "vm"
}

// createGrace is how long the call that creates a task may go on once
// the caller's context has ended: cut while vCenter answers, the task
// would run with nobody holding its reference; a hung vCenter still
// frees the caller soon after its deadline.
const createGrace = time.Second

// graced is a context that ends grace after ctx does, or when its
// CancelFunc is called.
func graced(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	g, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancel) })
	return g, func() { stop(); cancel() }
}

// taskSettle bounds the wait for a task whose first wait was cut short.
const taskSettle = 30 * time.Second

// settle waits, past ctx's end, for t to end, and says how it did; its
// error wraps ctx's, as the operation was cut short whatever the task did.
func settle(ctx context.Context, op string, obj providers.Object, t *object.Task) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskSettle)
	defer cancel()
	info, err := t.WaitForResult(sctx)
	ref := t.Reference().Value
	switch {
	case info != nil && info.State == types.TaskInfoStateSuccess:
		return fmt.Errorf("%s %s %q: cut short while its vSphere task %s ran, which then succeeded: %w", op, noun(obj), obj.Name, ref, context.Cause(ctx))
	case info != nil && info.State == types.TaskInfoStateError:
		return fmt.Errorf("%s %s %q: cut short while its vSphere task %s ran, which then failed (%v): %w", op, noun(obj), obj.Name, ref, describe(err), context.Cause(ctx))
	}
	return fmt.Errorf("%s %s %q: cut short, and its vSphere task %s had not ended %s later: its outcome is unknown: %w", op, noun(obj), obj.Name, ref, taskSettle, context.Cause(ctx))
}

// PowerOn powers a VM on.
func (p *Provider) PowerOn(ctx context.Context, obj providers.Object) error {
	return p.task(ctx, "power on", obj, p.vm(obj).PowerOn)
}

// PowerOff powers a VM off hard.
func (p *Provider) PowerOff(ctx context.Context, obj providers.Object) error {
	return p.task(ctx, "power off", obj, p.vm(obj).PowerOff)
}

// Reset resets a VM hard.
func (p *Provider) Reset(ctx context.Context, obj providers.Object) error {
	return p.task(ctx, "reset", obj, p.vm(obj).Reset)
}

// Suspend suspends a VM.
func (p *Provider) Suspend(ctx context.Context, obj providers.Object) error {
	return p.task(ctx, "suspend", obj, p.vm(obj).Suspend)
}

// ShutdownGuest asks VMware Tools in the guest to shut the OS down.
func (p *Provider) ShutdownGuest(ctx context.Context, obj providers.Object) error {
	if err := p.vm(obj).ShutdownGuest(ctx); err != nil {
		return fmt.Errorf("shut down guest of vm %q: %w", obj.Name, describe(err))
	}
	return nil
}

// PowerState reads a VM's power state.
func (p *Provider) PowerState(ctx context.Context, obj providers.Object) (providers.PowerState, error) {
	var vm mo.VirtualMachine
	if err := p.vm(obj).Properties(ctx, p.vm(obj).Reference(), []string{"runtime.powerState"}, &vm); err != nil {
		return "", fmt.Errorf("read power state of vm %q: %w", obj.Name, describe(err))
	}
	return providers.PowerState(vm.Runtime.PowerState), nil
}

// Destroy powers a VM off if needed and deletes it from disk.
//
// vCenter destroys only a VM that is off, and the VM's owner may power it
// back on between the two tasks (CAPV powers on a VM it finds off, in the
// lab within a second): a destroy refused for the power state powers the
// VM off again and retries, destroyAttempts times in all.
func (p *Provider) Destroy(ctx context.Context, obj providers.Object) error {
	var err error
	for range destroyAttempts {
		var state providers.PowerState
		if state, err = p.PowerState(ctx, obj); err != nil {
			return err
		}
		if state != providers.PoweredOff {
			// Off already (powered off by another between the two
			// reads) is as good.
			if err := p.PowerOff(ctx, obj); err != nil && !isFault(err, "InvalidPowerState") {
				return fmt.Errorf("destroy: %w", err)
			}
		}
		if err = p.task(ctx, "destroy", obj, p.vm(obj).Destroy); !isFault(err, "InvalidPowerState") {
			return err
		}
	}
	return fmt.Errorf("%w (powered back on each of %d times it was powered off)", err, destroyAttempts)
}

// destroyAttempts bounds Destroy's power-off and destroy rounds.
const destroyAttempts = 5

// isFault tells whether err is the vSphere fault named fault.
func isFault(err error, fault string) bool {
	var fe *FaultError
	return errors.As(err, &fe) && fe.Fault == fault
}

// Exists reports whether the VM is still in the inventory.
func (p *Provider) Exists(ctx context.Context, obj providers.Object) (bool, error) {
	_, err := p.PowerState(ctx, obj)
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, err
}

// SetNICConnected connects or disconnects a network adapter, chosen by its
// label ("Network adapter 1"), its device name ("ethernet-0"), or the first
// one when nic is "".
func (p *Provider) SetNICConnected(ctx context.Context, obj providers.Object, nic string, connected bool) error {
	vm := p.vm(obj)
	dev, err := p.nic(ctx, obj, nic)
	if err != nil {
		return err
	}
	card := dev.GetVirtualDevice()
	if card.Connectable == nil {
		card.Connectable = &types.VirtualDeviceConnectInfo{}
	}
	card.Connectable.Connected = connected
	card.Connectable.StartConnected = connected
	op := map[bool]string{true: "connect", false: "disconnect"}[connected]
	if err := vm.EditDevice(ctx, dev); err != nil {
		return fmt.Errorf("%s nic %q of vm %q: %w", op, nicLabel(dev), obj.Name, describe(err))
	}
	return nil
}

// NICConnected reports whether the adapter is connected.
func (p *Provider) NICConnected(ctx context.Context, obj providers.Object, nic string) (bool, error) {
	dev, err := p.nic(ctx, obj, nic)
	if err != nil {
		return false, err
	}
	c := dev.GetVirtualDevice().Connectable
	return c != nil && c.Connected, nil
}

func (p *Provider) nic(ctx context.Context, obj providers.Object, name string) (types.BaseVirtualDevice, error) {
	devices, err := p.vm(obj).Device(ctx)
	if err != nil {
		return nil, fmt.Errorf("read devices of vm %q: %w", obj.Name, describe(err))
	}
	nics := devices.SelectByType((*types.VirtualEthernetCard)(nil))
	var labels []string
	for _, d := range nics {
		if name == "" || name == devices.Name(d) || name == nicLabel(d) {
			return d, nil
		}
		labels = append(labels, nicLabel(d))
	}
	if len(nics) == 0 {
		return nil, fmt.Errorf("vm %q has no network adapter: %w", obj.Name, providers.ErrNotFound)
	}
	return nil, fmt.Errorf("vm %q has no network adapter %q; it has: %s: %w", obj.Name, name, strings.Join(labels, ", "), providers.ErrNotFound)
}

func nicLabel(d types.BaseVirtualDevice) string {
	if info := d.GetVirtualDevice().DeviceInfo; info != nil {
		return info.GetDescription().Label
	}
	return ""
}

// Watch notifies on every change of the VM's power or connection state,
// through a property collector, until ctx ends or the VM disappears.
func (p *Provider) Watch(ctx context.Context, obj providers.Object) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	ref := p.vm(obj).Reference()
	go func() {
		defer close(ch)
		err := waitFor(ctx, p.client, ref, []string{"runtime.powerState", "runtime.connectionState"}, func([]types.PropertyChange) bool {
			select {
			case ch <- struct{}{}:
			default:
			}
			return false
		})
		if err != nil && ctx.Err() == nil {
			p.log.V(1).Info("vm watch ended; waits fall back to polling", "vm", obj.Name, "error", describe(err).Error())
		}
	}()
	return ch, nil
}

// ListVMs implements providers.Inventory: every VM of the datacenter,
// templates left out, read through one container view and one property
// collector call. It reads only (the view lives in this session).
func (p *Provider) ListVMs(ctx context.Context) ([]providers.VMInfo, error) {
	vms, err := p.viewVMs(ctx, "name", "config.uuid", "config.template", "runtime.powerState", "runtime.host")
	if err != nil {
		return nil, fmt.Errorf("list VMs: %w", err)
	}
	hosts, err := p.hostNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]providers.VMInfo, 0, len(vms))
	for _, vm := range vms {
		if vm.Config == nil || vm.Config.Template {
			continue
		}
		info := providers.VMInfo{Name: vm.Name, UUID: vm.Config.Uuid, PowerState: providers.PowerState(vm.Runtime.PowerState)}
		if vm.Runtime.Host != nil {
			info.Host = hosts[vm.Runtime.Host.Value]
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// hostNames are the names of the datacenter's ESXi hosts, by reference.
func (p *Provider) hostNames(ctx context.Context) (map[string]string, error) {
	v, err := view.NewManager(p.client).CreateContainerView(ctx, p.dc.Reference(), []string{"HostSystem"}, true)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", describe(err))
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var hosts []mo.HostSystem
	if err := v.Retrieve(ctx, []string{"HostSystem"}, []string{"name"}, &hosts); err != nil {
		return nil, fmt.Errorf("list hosts: %w", describe(err))
	}
	names := make(map[string]string, len(hosts))
	for _, h := range hosts {
		names[h.Self.Value] = h.Name
	}
	return names, nil
}
