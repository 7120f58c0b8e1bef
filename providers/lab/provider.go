package lab

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/faultline-dev/faultline/internal/nodecmd"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/nodesim"
	"github.com/faultline-dev/faultline/providers/lab/realnodes"
)

// Name is the lab provider's name, in results, journals and on the
// command line.
const Name = "lab"

// Provider is the lab's provider, named "lab": the Cluster API provider
// over the lab's management cluster (targets resolve to Machines, VM faults
// go to vcsim through the vSphere API), plus what only the lab can do to a
// node (stop its kubelet).
func (l *Lab) Provider() *Provider { return l.provider }

// Provider is the lab's provider; see Lab.Provider.
type Provider struct {
	*capi.Provider
	// lab is the lab it is the provider of (its management plane's
	// upgrades).
	lab   *Lab
	nodes *nodesim.Sim
	// real runs the cluster whose nodes are containers; its node faults
	// run in the containers, as kind's do.
	real *realnodes.Nodes
}

var (
	_ providers.NodeKubelet         = (*Provider)(nil)
	_ providers.NodeStaticPods      = (*Provider)(nil)
	_ providers.EtcdLeadership      = (*Provider)(nil)
	_ providers.EtcdMembers         = (*Provider)(nil)
	_ providers.CapabilityCondition = (*Provider)(nil)
	_ providers.SimulatedNodes      = (*Provider)(nil)
	_ providers.ManagementUpgrade   = (*Provider)(nil)
	_ providers.Workloads           = (*Provider)(nil)
)

// SimulatesNodes implements providers.SimulatedNodes; a lab with real
// nodes has not the capability (CapabilityUnavailable).
func (p *Provider) SimulatesNodes() {}

// CapabilityUnavailable implements providers.CapabilityCondition: every
// capability the lab implements is there (the embedded capi.Provider's
// conditions on vCenter guest logins are not the lab's), except a stuck
// etcd leader in a lab with real nodes: their etcd is the real one, whose
// leader faultline cannot hold.
func (p *Provider) CapabilityUnavailable(c providers.Capability) error {
	switch {
	case c == providers.CapEtcdLeadership && p.real != nil:
		return fmt.Errorf("a stuck etcd leader is played by the node simulator only, and cluster %s has real nodes: %w", p.real.Cluster(), providers.ErrUnsupported)
	case c == providers.CapSimulatedNodes && p.real != nil:
		return fmt.Errorf("the lab's real-node tier: cluster %s has real nodes: %w", p.real.Cluster(), providers.ErrUnsupported)
	case c == providers.CapWorkloads && p.real == nil:
		return fmt.Errorf("the simulated tier runs no pods, and a disruption it made up is the one figure not to hand over; workloads need real nodes (--nodes containers): %w", providers.ErrUnsupported)
	}
	return nil
}

// SimulatedUnavailable is why the provider of a lab whose nodes are
// simulated cannot use c (its CapabilityUnavailable once open), nil when
// it can: known before the lab starts, so that a run need not start one
// for a scenario it would skip.
func SimulatedUnavailable(c providers.Capability) error {
	return (&Provider{}).CapabilityUnavailable(c)
}

// NodeNetwork implements providers.Workloads for the cluster with real
// nodes: the lab's docker network, which the lab made.
func (p *Provider) NodeNetwork(_ context.Context, scope providers.Object) (netip.Prefix, error) {
	if p.real == nil || scope.Attributes[providers.AttrCluster] != p.real.Cluster() {
		return netip.Prefix{}, fmt.Errorf("%s is not in the cluster with real nodes: the simulated tier runs no pods: %w", scope, providers.ErrUnsupported)
	}
	return p.real.Subnet(), nil
}

// machineNode returns the name of m's node. what, when not empty, is what
// only a control plane runs ("static pods", "etcd"), and m must be one.
func machineNode(m providers.Object, what string) (string, error) {
	node := m.Attributes[providers.AttrNode]
	if node == "" {
		return "", fmt.Errorf("machine %s has no node yet: %w", m.Name, providers.ErrNotFound)
	}
	if what != "" {
		if err := providers.RequireControlPlane(m, what); err != nil {
			return "", err
		}
	}
	return node, nil
}

// realExec runs cmd in the container of m's node, when m's cluster has
// real nodes (ok false otherwise).
func (p *Provider) realExec(ctx context.Context, m providers.Object, cmd ...string) (out []byte, ok bool, err error) {
	if p.real == nil || m.Attributes[providers.AttrCluster] != p.real.Cluster() {
		return nil, false, nil
	}
	node, err := machineNode(m, "")
	if err != nil {
		return nil, true, err
	}
	out, err = p.real.Exec(ctx, node, cmd...)
	if realnodes.IsGone(err) {
		err = fmt.Errorf("node %s: its VM's container is gone: %w", node, providers.ErrNotFound)
	}
	return out, true, err
}

// SetKubelet implements providers.NodeKubelet on the Machine's node.
func (p *Provider) SetKubelet(ctx context.Context, m providers.Object, running bool) error {
	if _, real, err := p.realExec(ctx, m, nodecmd.Kubelet(running)...); real {
		return err
	}
	node, err := machineNode(m, "")
	if err != nil {
		return err
	}
	p.nodes.SetKubelet(node, running)
	return nil
}

// SetStaticPod implements providers.NodeStaticPods on the Machine's node.
func (p *Provider) SetStaticPod(ctx context.Context, m providers.Object, component string, running bool) error {
	node, err := machineNode(m, "static pods")
	if err != nil {
		return err
	}
	if _, real, err := p.realExec(ctx, m, nodecmd.StaticPod(component, running)...); real {
		return err
	}
	p.nodes.SetStaticPod(node, component, running)
	return nil
}

// StaticPodRunning implements providers.NodeStaticPods: the component runs
// while the node's VM is up, booted and the component not stopped (on a
// real node: a process of its name runs).
func (p *Provider) StaticPodRunning(ctx context.Context, m providers.Object, component string) (bool, error) {
	node, err := machineNode(m, "static pods")
	if err != nil {
		return false, err
	}
	if out, real, err := p.realExec(ctx, m, nodecmd.ProcessNames...); real {
		return err == nil && nodecmd.Running(out, component), err
	}
	return p.nodes.StaticPodRunning(node, component, time.Now()), nil
}

// SetMemberStartDelay implements providers.EtcdMembers on the cluster of
// the Machine m: kubeadm join's etcd members start d after they are added
// as learners; on real nodes, d after kubeadm wrote the etcd manifest,
// which is held back that long.
func (p *Provider) SetMemberStartDelay(_ context.Context, m providers.Object, d time.Duration) error {
	ns, cluster := m.Attributes[providers.AttrNamespace], m.Attributes[providers.AttrCluster]
	if cluster == "" {
		return fmt.Errorf("%s belongs to no Cluster API Cluster: %w", m, providers.ErrUnsupported)
	}
	if p.real != nil && cluster == p.real.Cluster() {
		p.real.SetMemberStartDelay(d)
		return nil
	}
	return p.nodes.SetMemberStartDelay(labconfig.ClusterKey(ns, cluster), d)
}

// SetLeaderStuck implements providers.EtcdLeadership on the Machine's
// node: stuck, its member takes leadership and keeps it, and no new
// control plane can join; freed, leadership moves to another member.
// Real nodes do not play it (CapabilityUnavailable).
func (p *Provider) SetLeaderStuck(_ context.Context, m providers.Object, stuck bool) error {
	node, err := machineNode(m, "etcd")
	if err != nil {
		return err
	}
	if p.real != nil && m.Attributes[providers.AttrCluster] == p.real.Cluster() {
		return fmt.Errorf("a stuck etcd leader on real nodes: %w", providers.ErrUnsupported)
	}
	return p.nodes.SetLeaderStuck(node, stuck)
}
