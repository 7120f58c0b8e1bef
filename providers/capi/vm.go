package capi

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers"
)

// errNoProviderID is a Machine not provisioned yet: its VM cannot be
// found, and may be by the time a fault needs it.
var errNoProviderID = fmt.Errorf("no providerID: %w", providers.ErrNotFound)

// vm finds the VM behind a Machine by its providerID. A Machine resolved
// before it had one is read again.
func (p *Provider) vm(ctx context.Context, obj providers.Object) (providers.Object, error) {
	if p.vc == nil {
		return providers.Object{}, fmt.Errorf("VM of %s: no vCenter configured: %w", obj, providers.ErrUnsupported)
	}
	p.mu.Lock()
	vm, ok := p.vms[obj.ID]
	p.mu.Unlock()
	if ok {
		return vm, nil
	}
	pid := obj.Attributes[providers.AttrProviderID]
	if pid == "" {
		m := &clusterv1.Machine{}
		if err := p.c.Get(ctx, client.ObjectKey{Namespace: obj.Attributes[providers.AttrNamespace], Name: obj.Name}, m); err != nil {
			return providers.Object{}, fmt.Errorf("get Machine %s: %w", obj.Name, err)
		}
		pid = m.Spec.ProviderID
	}
	if pid == "" {
		return providers.Object{}, fmt.Errorf("Machine %s has no providerID yet: %w", obj.Name, errNoProviderID)
	}
	vms, err := p.vc.Resolve(ctx, providers.Selector{ProviderID: pid})
	if err != nil {
		return providers.Object{}, fmt.Errorf("VM of Machine %s: %w", obj.Name, err)
	}
	if len(vms) == 0 {
		return providers.Object{}, fmt.Errorf("VM of Machine %s (%s): %w", obj.Name, pid, providers.ErrNotFound)
	}
	p.mu.Lock()
	p.vms[obj.ID] = vms[0]
	p.mu.Unlock()
	return vms[0], nil
}

func (p *Provider) onVM(ctx context.Context, obj providers.Object, f func(providers.Object) error) error {
	vm, err := p.vm(ctx, obj)
	if err != nil {
		return err
	}
	return f(vm)
}

// PowerOn implements providers.VMPower on the Machine's VM.
func (p *Provider) PowerOn(ctx context.Context, obj providers.Object) error {
	return p.onVM(ctx, obj, func(vm providers.Object) error { return p.vc.PowerOn(ctx, vm) })
}

// PowerOff implements providers.VMPower on the Machine's VM.
func (p *Provider) PowerOff(ctx context.Context, obj providers.Object) error {
	return p.onVM(ctx, obj, func(vm providers.Object) error { return p.vc.PowerOff(ctx, vm) })
}

// ShutdownGuest implements providers.VMPower on the Machine's VM.
func (p *Provider) ShutdownGuest(ctx context.Context, obj providers.Object) error {
	return p.onVM(ctx, obj, func(vm providers.Object) error { return p.vc.ShutdownGuest(ctx, vm) })
}

// Reset implements providers.VMPower on the Machine's VM.
func (p *Provider) Reset(ctx context.Context, obj providers.Object) error {
	return p.onVM(ctx, obj, func(vm providers.Object) error { return p.vc.Reset(ctx, vm) })
}

// Suspend implements providers.VMPower on the Machine's VM.
func (p *Provider) Suspend(ctx context.Context, obj providers.Object) error {
	return p.onVM(ctx, obj, func(vm providers.Object) error { return p.vc.Suspend(ctx, vm) })
}

// PowerState implements providers.VMPower on the Machine's VM.
func (p *Provider) PowerState(ctx context.Context, obj providers.Object) (providers.PowerState, error) {
	var st providers.PowerState
	err := p.onVM(ctx, obj, func(vm providers.Object) error {
		var err error
		st, err = p.vc.PowerState(ctx, vm)
		return err
	})
	return st, err
}

// ListVMs implements providers.Inventory through the vCenter, when the
// provider has one.
func (p *Provider) ListVMs(ctx context.Context) ([]providers.VMInfo, error) {
	if p.vc == nil {
		return nil, fmt.Errorf("no vCenter configured: %w", providers.ErrUnsupported)
	}
	return p.vc.ListVMs(ctx)
}

// Destroy implements providers.VMLifecycle on the Machine's VM.
func (p *Provider) Destroy(ctx context.Context, obj providers.Object) error {
	return p.onVM(ctx, obj, func(vm providers.Object) error { return p.vc.Destroy(ctx, vm) })
}

// Exists implements providers.VMLifecycle: whether the Machine's VM is
// still in the inventory.
func (p *Provider) Exists(ctx context.Context, obj providers.Object) (bool, error) {
	var ok bool
	err := p.onVM(ctx, obj, func(vm providers.Object) error {
		var err error
		ok, err = p.vc.Exists(ctx, vm)
		return err
	})
	if errors.Is(err, providers.ErrNotFound) {
		return false, nil
	}
	return ok, err
}
