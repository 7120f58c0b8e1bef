package capi

import (
	"context"
	"fmt"

	"github.com/faultline-dev/faultline/framework"
)

// Node faults on a Machine run in its VM's guest through VMware Tools
// guest operations: the vCenter provider's, when it has a guest login.
var (
	_ framework.NodeKubelet         = (*Provider)(nil)
	_ framework.NodeStaticPods      = (*Provider)(nil)
	_ framework.CapabilityCondition = (*Provider)(nil)
)

// CapabilityUnavailable implements framework.CapabilityCondition: VM faults
// need a vCenter, node faults a vCenter with a guest login.
func (p *Provider) CapabilityUnavailable(c framework.Capability) error {
	switch c {
	case framework.CapNodeKubelet, framework.CapNodeStaticPods:
		if p.vc == nil {
			return fmt.Errorf("node faults on Cluster API Machines run in their VMs' guests through VMware Tools, and no vCenter is configured (--vcenter-url): %w", framework.ErrUnsupported)
		}
		return p.vc.GuestOperations()
	}
	return nil
}

// SetKubelet implements framework.NodeKubelet in the Machine's VM.
func (p *Provider) SetKubelet(ctx context.Context, obj framework.Object, running bool) error {
	return p.onVM(ctx, obj, func(vm framework.Object) error { return p.vc.SetKubelet(ctx, vm, running) })
}

// hasStaticPods refuses a Machine that is not a control plane.
func hasStaticPods(obj framework.Object) error {
	if obj.Attributes[attrRole] != "control-plane" {
		return fmt.Errorf("machine %s is a %s: only control-plane nodes run static pods", obj.Name, obj.Attributes[attrRole])
	}
	return nil
}

// SetStaticPod implements framework.NodeStaticPods in the Machine's VM.
func (p *Provider) SetStaticPod(ctx context.Context, obj framework.Object, component string, running bool) error {
	if err := hasStaticPods(obj); err != nil {
		return err
	}
	return p.onVM(ctx, obj, func(vm framework.Object) error { return p.vc.SetStaticPod(ctx, vm, component, running) })
}

// StaticPodRunning implements framework.NodeStaticPods in the Machine's VM.
func (p *Provider) StaticPodRunning(ctx context.Context, obj framework.Object, component string) (bool, error) {
	if err := hasStaticPods(obj); err != nil {
		return false, err
	}
	var running bool
	err := p.onVM(ctx, obj, func(vm framework.Object) error {
		var err error
		running, err = p.vc.StaticPodRunning(ctx, vm, component)
		return err
	})
	return running, err
}
