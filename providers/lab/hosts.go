package lab

import (
	"context"
	"time"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
)

// attrHARestart is on a host HostOf returns when its cluster's spec.lab
// turns vSphere HA on: how long after the host fails HA restarts its VMs.
// The journal records it with the host.
const attrHARestart providers.Attribute = "haRestartAfter"

// HostOf implements providers.Hosts as the capi provider does, and names
// the HA restart the target's cluster has (spec.lab.ha).
func (p *Provider) HostOf(ctx context.Context, obj providers.Object) (providers.Object, []providers.Object, error) {
	host, down, err := p.Provider.HostOf(ctx, obj)
	if err != nil {
		return host, down, err
	}
	key := obj.Attributes[providers.AttrNamespace] + "/" + obj.Attributes[providers.AttrCluster]
	if cs, ok := p.lab.clusters.Get(key); ok && cs.HA.Restart() > 0 {
		host.Attributes[attrHARestart] = cs.HA.Restart().String()
	}
	return host, down, nil
}

// FailHost implements providers.Hosts: the vCenter's host failure, then,
// when HA is on for the host's cluster, HA's restart of each of its VMs
// on another host once the restart time has passed, unless the host is
// back or the VM powered on by then. The restarts end with the lab.
func (p *Provider) FailHost(ctx context.Context, host providers.Object, vms []string) error {
	if err := p.Provider.FailHost(ctx, host, vms); err != nil {
		return err
	}
	after, err := time.ParseDuration(host.Attributes[attrHARestart])
	if err != nil || after <= 0 {
		return nil
	}
	l := p.lab
	log := l.in.Log.WithValues("host", host.Name)
	go func() {
		select {
		case <-l.runCtx.Done():
			return
		case <-time.After(after):
		}
		for _, id := range vms {
			to, err := l.sim.RestartElsewhere(types.ManagedObjectReference{Type: "VirtualMachine", Value: id})
			switch {
			case err != nil:
				log.Info("vSphere HA could not restart a VM", "vm", id, "error", err.Error())
			case to != "":
				log.V(1).Info("vSphere HA restarted a VM", "vm", id, "on", to)
			}
		}
	}()
	return nil
}

var _ providers.VCenterReach = (*Provider)(nil)

// SetVCenterReachable implements providers.VCenterReach: the lab's
// clusters reach vcsim through its gate (vcsim.Gate), which this cuts;
// faultline's provider reaches vcsim directly. It acts on every cluster
// of the lab, as a cut between a management cluster and its vCenter does.
func (p *Provider) SetVCenterReachable(_ context.Context, reachable bool) error {
	p.lab.sim.Gate().SetReachable(reachable)
	return nil
}

// Preflight implements providers.Preflighter: the lab cuts CAPV's way to
// vcsim at its gate, which is always there; the rest is the management
// cluster's rule.
func (p *Provider) Preflight(ctx context.Context, c providers.Capability, obj providers.Object) error {
	if c == providers.CapVCenterReach {
		return nil
	}
	return p.Provider.Preflight(ctx, c, obj)
}
