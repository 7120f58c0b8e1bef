package capi

import (
	"context"
	"fmt"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

var _ providers.Hosts = (*Provider)(nil)

// HostOf implements providers.Hosts on the Machine's VM: its host, and
// the Machines of its Cluster whose VMs are powered on there (with their
// etcd attributes, for the blast-radius guard). A VM on the host that is
// no Machine of that Cluster's goes down too, but is no target's.
func (p *Provider) HostOf(ctx context.Context, obj providers.Object) (providers.Object, []providers.Object, error) {
	vm, err := p.vm(ctx, obj)
	if err != nil {
		return providers.Object{}, nil, err
	}
	host, on, err := p.vc.HostOf(ctx, vm)
	if err != nil {
		return providers.Object{}, nil, err
	}
	uuids := map[string]bool{}
	for _, v := range on {
		uuids[strings.ToLower(v.Attributes[providers.AttrUUID])] = true
	}
	cluster := obj.Attributes[providers.AttrNamespace] + "/" + obj.Attributes[providers.AttrCluster]
	machines, err := p.Resolve(ctx, providers.Selector{Cluster: cluster})
	if err != nil {
		return providers.Object{}, nil, fmt.Errorf("Machines of %s: %w", cluster, err)
	}
	var down []providers.Object
	for _, m := range machines {
		if uuids[providerUUID(m.Attributes[providers.AttrProviderID])] {
			down = append(down, m)
		}
	}
	return host, down, nil
}

// FailHost implements providers.Hosts through the vCenter.
func (p *Provider) FailHost(ctx context.Context, host providers.Object, vms []string) error {
	if p.vc == nil {
		return fmt.Errorf("fail host %s: no vCenter configured: %w", host.Name, providers.ErrUnsupported)
	}
	return p.vc.FailHost(ctx, host, vms)
}

// RestoreHost implements providers.Hosts through the vCenter, as an
// operator brings a host back: the VMs of Machines being deleted (a
// remediation CAPV could not finish while the host was down) stay off,
// and CAPV deletes them now; the others are powered on.
func (p *Provider) RestoreHost(ctx context.Context, host providers.Object, vms []string) error {
	keepOff, err := p.deletingVMs(ctx, "restore host "+host.Name)
	if err != nil {
		return err
	}
	return p.vc.RestoreHostKeeping(ctx, host, vms, keepOff)
}

// EnterMaintenance implements providers.Hosts through the vCenter.
func (p *Provider) EnterMaintenance(ctx context.Context, host providers.Object, vms []string) error {
	if p.vc == nil {
		return fmt.Errorf("maintenance of host %s: no vCenter configured: %w", host.Name, providers.ErrUnsupported)
	}
	return p.vc.EnterMaintenance(ctx, host, vms)
}

// ExitMaintenance implements providers.Hosts through the vCenter, with
// RestoreHost's rule for the VMs it shut down.
func (p *Provider) ExitMaintenance(ctx context.Context, host providers.Object, vms []string) error {
	keepOff, err := p.deletingVMs(ctx, "exit maintenance on host "+host.Name)
	if err != nil {
		return err
	}
	return p.vc.ExitMaintenanceKeeping(ctx, host, vms, keepOff)
}

// deletingVMs tells the VMs of Machines being deleted, by BIOS UUID.
func (p *Provider) deletingVMs(ctx context.Context, op string) (func(providers.Object) bool, error) {
	if p.vc == nil {
		return nil, fmt.Errorf("%s: no vCenter configured: %w", op, providers.ErrUnsupported)
	}
	var list clusterv1.MachineList
	if err := p.c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("%s: list Machines: %w", op, err)
	}
	deleting := map[string]bool{}
	for _, m := range list.Items {
		if uuid := providerUUID(m.Spec.ProviderID); uuid != "" && !m.DeletionTimestamp.IsZero() {
			deleting[uuid] = true
		}
	}
	return func(vm providers.Object) bool { return deleting[strings.ToLower(vm.Attributes[providers.AttrUUID])] }, nil
}

// onHost is the BIOS UUIDs (lower case) of the VMs on the ESXi host named
// host, for a selector's host; nil when host is "".
func (p *Provider) onHost(ctx context.Context, host string) (map[string]bool, error) {
	if host == "" {
		return nil, nil
	}
	if p.vc == nil {
		return nil, fmt.Errorf("select by host %s: the hosts are vCenter's, and no vCenter is configured (--vcenter-url): %w", host, providers.ErrUnsupported)
	}
	vms, err := p.vc.ListVMs(ctx)
	if err != nil {
		return nil, fmt.Errorf("select by host %s: %w", host, err)
	}
	on := map[string]bool{}
	for _, vm := range vms {
		if vm.Host == host {
			on[strings.ToLower(vm.UUID)] = true
		}
	}
	return on, nil
}

// providerUUID is the BIOS UUID (lower case) of a CAPV providerID, "" for
// another (vsphere.UUIDFromProviderID's parse).
func providerUUID(id string) string {
	uuid, err := vsphere.UUIDFromProviderID(id)
	if err != nil {
		return ""
	}
	return strings.ToLower(uuid)
}
