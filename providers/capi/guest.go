package capi

import (
	"context"
	"errors"
	"fmt"

	"github.com/faultline-dev/faultline/providers"
)

// Node faults on a Machine run in its VM's guest through VMware Tools
// guest operations: the vCenter provider's, when it has a guest login.
var (
	_ providers.NodeKubelet         = (*Provider)(nil)
	_ providers.NodeStaticPods      = (*Provider)(nil)
	_ providers.CapabilityCondition = (*Provider)(nil)
	_ providers.Preflighter         = (*Provider)(nil)
)

// CapabilityUnavailable implements providers.CapabilityCondition: VM faults
// need a vCenter, node faults a vCenter with a guest login, and the cut of
// CAPV's way to vCenter faultline's image for its probe.
func (p *Provider) CapabilityUnavailable(c providers.Capability) error {
	switch c {
	case providers.CapVMPower, providers.CapVMLifecycle, providers.CapVMNetwork, providers.CapHosts:
		if p.vc == nil {
			return fmt.Errorf("VM faults on Cluster API Machines go to their VMs through vCenter, and no vCenter is configured (--vcenter-url): %w (%w)", providers.ErrUnsupported, providers.ErrNotConfigured)
		}
	case providers.CapNodeKubelet, providers.CapNodeStaticPods:
		if p.vc == nil {
			return fmt.Errorf("node faults on Cluster API Machines run in their VMs' guests through VMware Tools, and no vCenter is configured (--vcenter-url): %w", providers.ErrUnsupported)
		}
		return p.vc.GuestOperations()
	case providers.CapVCenterReach:
		if p.probeImage == "" {
			return fmt.Errorf("vcenter.unreachable proves its cut with a probe pod of faultline's image, and none is given (--image; hack/image.sh builds it): %w", providers.ErrUnsupported)
		}
	}
	return nil
}

// SetKubelet implements providers.NodeKubelet in the Machine's VM.
func (p *Provider) SetKubelet(ctx context.Context, obj providers.Object, running bool) error {
	return p.onVM(ctx, obj, func(vm providers.Object) error { return p.vc.SetKubelet(ctx, vm, running) })
}

// SetStaticPod implements providers.NodeStaticPods in the Machine's VM.
func (p *Provider) SetStaticPod(ctx context.Context, obj providers.Object, component string, running bool) error {
	if err := providers.RequireControlPlane(obj, "static pods"); err != nil {
		return err
	}
	return p.onVM(ctx, obj, func(vm providers.Object) error { return p.vc.SetStaticPod(ctx, vm, component, running) })
}

// StaticPodRunning implements providers.NodeStaticPods in the Machine's VM.
func (p *Provider) StaticPodRunning(ctx context.Context, obj providers.Object, component string) (bool, error) {
	if err := providers.RequireControlPlane(obj, "static pods"); err != nil {
		return false, err
	}
	var running bool
	err := p.onVM(ctx, obj, func(vm providers.Object) error {
		var err error
		running, err = p.vc.StaticPodRunning(ctx, vm, component)
		return err
	})
	return running, err
}

// Preflight implements providers.Preflighter: a VM or node fault on a
// Machine needs the VM behind it, found in the vCenter by its providerID.
func (p *Provider) Preflight(ctx context.Context, c providers.Capability, obj providers.Object) error {
	switch c {
	case providers.CapVMPower, providers.CapVMLifecycle, providers.CapVMNetwork, providers.CapHosts, providers.CapNodeKubelet, providers.CapNodeStaticPods:
		_, err := p.vm(ctx, obj)
		if errors.Is(err, errNoProviderID) {
			return nil // still provisioning: the fault reads it again
		}
		return err
	case providers.CapVCenterReach:
		return p.preflightCut(ctx)
	}
	return nil
}
