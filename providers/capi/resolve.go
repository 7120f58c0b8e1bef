package capi

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers"
)

// Resolve implements providers.Provider: it returns the Machines the
// selector matches.
func (p *Provider) Resolve(ctx context.Context, sel providers.Selector) ([]providers.Object, error) {
	if sel.VM != "" || sel.UUID != "" {
		return nil, fmt.Errorf("select by vm or uuid needs the vsphere provider; select Machines by role, machineDeployment, controlPlane, nodeName, nodeLabels or providerID: %w", providers.ErrUnsupported)
	}
	opts := []client.ListOption{}
	ns, cluster := splitCluster(sel.Cluster)
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	labels := client.MatchingLabels{}
	if cluster != "" {
		labels[clusterv1.ClusterNameLabel] = cluster
	}
	if sel.MachineDeployment != "" {
		labels[clusterv1.MachineDeploymentNameLabel] = sel.MachineDeployment
	}
	opts = append(opts, labels)
	var list clusterv1.MachineList
	if err := p.c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("list Machines: %w", err)
	}
	onHost, err := p.onHost(ctx, sel.Host)
	if err != nil {
		return nil, err
	}
	var out []providers.Object
	generations := map[string]string{}
	for i := range list.Items {
		m := &list.Items[i]
		ok, err := p.matches(ctx, m, sel)
		if err != nil {
			return nil, err
		}
		if !ok || !m.DeletionTimestamp.IsZero() || onHost != nil && !onHost[providerUUID(m.Spec.ProviderID)] {
			continue
		}
		obj := p.object(m, list.Items)
		key := obj.Attributes[providers.AttrOwnerKind] + "/" + obj.Attributes[providers.AttrOwner]
		if _, ok := generations[key]; !ok {
			if generations[key], err = p.ownerGeneration(ctx, m.Namespace, obj.Attributes[providers.AttrOwnerKind], obj.Attributes[providers.AttrOwner]); err != nil {
				return nil, err
			}
		}
		obj.Attributes[providers.AttrOwnerGeneration] = generations[key]
		out = append(out, obj)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (p *Provider) matches(ctx context.Context, m *clusterv1.Machine, sel providers.Selector) (bool, error) {
	_, isCP := m.Labels[clusterv1.MachineControlPlaneLabel]
	switch sel.Role {
	case "":
	case "control-plane":
		if !isCP {
			return false, nil
		}
	case "worker":
		if isCP {
			return false, nil
		}
	default:
		return false, fmt.Errorf("role %q: expected control-plane or worker", sel.Role)
	}
	if sel.ControlPlane != "" && (!isCP || m.Labels[clusterv1.MachineControlPlaneNameLabel] != sel.ControlPlane) {
		return false, nil
	}
	if sel.ProviderID != "" && m.Spec.ProviderID != sel.ProviderID {
		return false, nil
	}
	if sel.NodeName != "" && nodeName(m) != sel.NodeName {
		return false, nil
	}
	if len(sel.NodeLabels) > 0 {
		node, err := p.node(ctx, m)
		if err != nil || node == nil {
			return false, err
		}
		for k, v := range sel.NodeLabels {
			if got, ok := node.Labels[k]; !ok || got != v {
				return false, nil
			}
		}
	}
	return true, nil
}

// object describes a Machine, with its owner and the owner's other
// Machines at this moment, so replacements can be told apart later.
func (p *Provider) object(m *clusterv1.Machine, all []clusterv1.Machine) providers.Object {
	kind, owner := ownerOf(m)
	var siblings []string
	for _, o := range all {
		if k, n := ownerOf(&o); k == kind && n == owner {
			siblings = append(siblings, o.Name)
		}
	}
	role := "worker"
	if kind == "KubeadmControlPlane" {
		role = providers.RoleControlPlane
	}
	obj := providers.Object{
		Kind: "Machine", Name: m.Name, ID: string(m.UID),
		Attributes: map[providers.Attribute]string{
			providers.AttrNamespace: m.Namespace, providers.AttrCluster: m.Spec.ClusterName, providers.AttrProviderID: m.Spec.ProviderID,
			providers.AttrOwnerKind: kind, providers.AttrOwner: owner, providers.AttrSiblings: strings.Join(siblings, ","),
			providers.AttrNode: nodeName(m), providers.AttrRole: role, providers.AttrVersion: m.Spec.Version,
		},
	}
	if ref := m.Spec.Bootstrap.ConfigRef; ref.IsDefined() {
		obj.Attributes[providers.AttrBootstrapConfig] = ref.APIGroup + "/" + ref.Kind + "/" + ref.Name
	}
	if role == providers.RoleControlPlane {
		// kubeadm runs a stacked etcd member on every control plane.
		obj.Attributes[providers.AttrEtcdCluster] = m.Namespace + "/" + owner
		obj.Attributes[providers.AttrEtcdMembers] = strconv.Itoa(len(siblings))
	}
	return obj
}

// ownerGeneration is the metadata.generation of a Machine's owner, ""
// for a MachineSet of no MachineDeployment or an owner gone.
func (p *Provider) ownerGeneration(ctx context.Context, ns, kind, name string) (string, error) {
	var o client.Object
	switch kind {
	case "KubeadmControlPlane":
		o = &controlplanev1.KubeadmControlPlane{}
	case "MachineDeployment":
		o = &clusterv1.MachineDeployment{}
	default:
		return "", nil
	}
	if err := p.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("get %s %s/%s: %w", kind, ns, name, err)
	}
	return strconv.FormatInt(o.GetGeneration(), 10), nil
}

// ownerOf names the object that keeps a Machine's replica count: the
// MachineDeployment (through its MachineSet) or the KubeadmControlPlane.
func ownerOf(m *clusterv1.Machine) (kind, name string) {
	if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
		return "KubeadmControlPlane", m.Labels[clusterv1.MachineControlPlaneNameLabel]
	}
	if md := m.Labels[clusterv1.MachineDeploymentNameLabel]; md != "" {
		return "MachineDeployment", md
	}
	return "MachineSet", m.Labels[clusterv1.MachineSetNameLabel]
}

func nodeName(m *clusterv1.Machine) string { return m.Status.NodeRef.Name }

func splitCluster(s string) (ns, name string) {
	if a, b, ok := strings.Cut(s, "/"); ok {
		return a, b
	}
	return "", s
}
