package capi

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers"
)

// Machine implements providers.ClusterAPI.
func (p *Provider) Machine(ctx context.Context, obj providers.Object) (providers.MachineState, error) {
	return p.readMachine(ctx, obj, true)
}

// MachineOnly implements providers.MachineReader: it reads the management
// cluster only.
func (p *Provider) MachineOnly(ctx context.Context, obj providers.Object) (providers.MachineState, error) {
	return p.readMachine(ctx, obj, false)
}

// readMachine reads obj's Machine, and with withNode its Node too.
func (p *Provider) readMachine(ctx context.Context, obj providers.Object, withNode bool) (providers.MachineState, error) {
	m := &clusterv1.Machine{}
	err := p.c.Get(ctx, client.ObjectKey{Namespace: obj.Attributes[providers.AttrNamespace], Name: obj.Name}, m)
	if apierrors.IsNotFound(err) || (err == nil && string(m.UID) != obj.ID) {
		return providers.MachineState{Name: obj.Name, Gone: true}, nil
	}
	if err != nil {
		return providers.MachineState{}, fmt.Errorf("get Machine %s: %w", obj.Name, err)
	}
	if !withNode {
		return machineState(m), nil
	}
	return p.state(ctx, m), nil
}

// machineState is what m itself says.
func machineState(m *clusterv1.Machine) providers.MachineState {
	st := providers.MachineState{
		Name: m.Name, Phase: m.Status.Phase, Deleting: !m.DeletionTimestamp.IsZero(), Node: nodeName(m),
		Stamps: map[string]time.Time{"creationTimestamp": m.CreationTimestamp.Time},
	}
	if st.Deleting {
		st.Stamps["deletionTimestamp"] = m.DeletionTimestamp.Time
	}
	for _, c := range m.Status.Conditions {
		switch c.Type {
		case clusterv1.MachineHealthCheckSucceededCondition:
			if c.Status == "False" {
				st.Unhealthy = true
				st.Stamps["HealthCheckSucceeded.lastTransitionTime"] = c.LastTransitionTime.Time
			}
		case clusterv1.MachineOwnerRemediatedCondition:
			st.Unhealthy = true
		case controlplanev1.KubeadmControlPlaneMachineEtcdMemberHealthyCondition:
			st.EtcdHealthy = string(c.Status)
		case clusterv1.MachineDeletingCondition:
			if st.Deleting {
				st.DeletingMessage = strings.TrimSpace(c.Reason + ": " + c.Message)
			}
		}
	}
	return st
}

// state is what m and its Node say.
func (p *Provider) state(ctx context.Context, m *clusterv1.Machine) providers.MachineState {
	st := machineState(m)
	if st.Node == "" {
		return st
	}
	node, err := p.node(ctx, m)
	if err != nil {
		// A workload cluster that cannot be read does not make the
		// Machine's own state unreadable: report the Node as unknown.
		st.NodeReady, st.NodeMessage = "Unknown", "workload cluster unreadable: "+err.Error()
		return st
	}
	if node == nil {
		return st
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			st.NodeReady, st.NodeMessage = string(c.Status), c.Message
			st.Stamps["node.Ready.lastTransitionTime"] = c.LastTransitionTime.Time
		}
	}
	return st
}

// Replacements implements providers.ClusterAPI.
func (p *Provider) Replacements(ctx context.Context, obj providers.Object) ([]providers.MachineState, error) {
	machines, err := p.ownerMachines(ctx, obj)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, s := range strings.Split(obj.Attributes[providers.AttrSiblings], ",") {
		known[s] = true
	}
	var out []providers.MachineState
	for i := range machines {
		if known[machines[i].Name] {
			continue
		}
		out = append(out, p.state(ctx, &machines[i]))
	}
	return out, nil
}

// Owner implements providers.ClusterAPI.
func (p *Provider) Owner(ctx context.Context, obj providers.Object) (providers.OwnerState, error) {
	o := providers.OwnerState{Kind: obj.Attributes[providers.AttrOwnerKind], Name: obj.Attributes[providers.AttrOwner]}
	key := client.ObjectKey{Namespace: obj.Attributes[providers.AttrNamespace], Name: o.Name}
	switch o.Kind {
	case "KubeadmControlPlane":
		kcp := &controlplanev1.KubeadmControlPlane{}
		if err := p.c.Get(ctx, key, kcp); err != nil {
			return o, fmt.Errorf("get KubeadmControlPlane %s: %w", o.Name, err)
		}
		o.Desired = int(deref(kcp.Spec.Replicas))
	case "MachineDeployment":
		md := &clusterv1.MachineDeployment{}
		if err := p.c.Get(ctx, key, md); err != nil {
			return o, fmt.Errorf("get MachineDeployment %s: %w", o.Name, err)
		}
		o.Desired = int(deref(md.Spec.Replicas))
	default:
		ms := &clusterv1.MachineSet{}
		if err := p.c.Get(ctx, key, ms); err != nil {
			return o, fmt.Errorf("get MachineSet %s: %w", o.Name, err)
		}
		o.Desired = int(deref(ms.Spec.Replicas))
	}
	machines, err := p.ownerMachines(ctx, obj)
	if err != nil {
		return o, err
	}
	for i := range machines {
		st := p.state(ctx, &machines[i])
		if st.Deleting {
			o.Deleting++
			o.DeletingWhy = append(o.DeletingWhy, st.Name+" "+st.DeletingMessage)
			continue
		}
		if st.Phase == "Running" && st.NodeReady == "True" {
			o.Healthy++
		}
		if st.EtcdHealthy == "True" {
			o.EtcdHealthy++
		}
	}
	return o, nil
}

func (p *Provider) ownerMachines(ctx context.Context, obj providers.Object) ([]clusterv1.Machine, error) {
	var list clusterv1.MachineList
	if err := p.c.List(ctx, &list, client.InNamespace(obj.Attributes[providers.AttrNamespace]),
		client.MatchingLabels{clusterv1.ClusterNameLabel: obj.Attributes[providers.AttrCluster]}); err != nil {
		return nil, fmt.Errorf("list Machines of cluster %s: %w", obj.Attributes[providers.AttrCluster], err)
	}
	var out []clusterv1.Machine
	for _, m := range list.Items {
		if k, n := ownerOf(&m); k == obj.Attributes[providers.AttrOwnerKind] && n == obj.Attributes[providers.AttrOwner] {
			out = append(out, m)
		}
	}
	return out, nil
}

// APIServer implements providers.ClusterAPI.
func (p *Provider) APIServer(ctx context.Context, obj providers.Object) error {
	c, err := p.Workload(ctx, obj.Attributes[providers.AttrNamespace], obj.Attributes[providers.AttrCluster])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.probeTimeout)
	defer cancel()
	var nodes corev1.NodeList
	return c.List(ctx, &nodes, client.Limit(1))
}

// node reads a Machine's Node, or nil if it has none or it is gone.
func (p *Provider) node(ctx context.Context, m *clusterv1.Machine) (*corev1.Node, error) {
	if nodeName(m) == "" {
		return nil, nil
	}
	c, err := p.Workload(ctx, m.Namespace, m.Spec.ClusterName)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.probeTimeout)
	defer cancel()
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: nodeName(m)}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get Node %s: %w", nodeName(m), err)
	}
	return n, nil
}
