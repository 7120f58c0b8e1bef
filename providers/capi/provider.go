package capi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// Provider reaches a Cluster API management cluster, the workload clusters
// it manages (through their kubeconfig Secrets) and, for VM faults, the
// vCenter behind CAPV. Targets resolve to Machines; VM faults and probes act
// on a Machine's VM, found from its providerID.
type Provider struct {
	name string
	c    client.Client
	// kubeconfig and context say how c was made, for recovery.
	kubeconfig, context string
	vc                  *vsphere.Provider
	log                 logr.Logger
	// probeTimeout bounds one read of a workload cluster, so a dead API
	// server costs a probe seconds, not client-go's default of forever.
	probeTimeout time.Duration
	// readOnly: every client refuses writes (WithReadOnly).
	readOnly bool

	// workload, when set, reaches every workload cluster instead of its
	// kubeconfig Secret (WithWorkloadClient).
	pairedWorkload client.Client

	// ObjectStore reads and writes objects of both clusters.
	ObjectStore

	mu        sync.Mutex
	workloads map[types.NamespacedName]client.Client
	vms       map[string]providers.Object // VM by Machine UID
}

var (
	_ providers.Provider     = (*Provider)(nil)
	_ providers.ClusterAPI   = (*Provider)(nil)
	_ providers.ObjectWriter = (*Provider)(nil)
	_ providers.VMPower      = (*Provider)(nil)
	_ providers.VMLifecycle  = (*Provider)(nil)
	_ providers.Describer    = (*Provider)(nil)
	_ providers.Watcher      = (*Provider)(nil)
	_ providers.Objects      = (*Provider)(nil)
)

// Option configures a Provider.
type Option func(*Provider)

// WithWorkloadClient reaches the workload cluster through c instead of
// the kubeconfig Secret Cluster API keeps: the workload half of a pair of
// kubeconfigs given by hand. It applies to every Cluster, so pair it with
// one.
func WithWorkloadClient(c client.Client) Option { return func(p *Provider) { p.pairedWorkload = c } }

// WithName sets the name results and journals record ("capi" by default).
func WithName(name string) Option { return func(p *Provider) { p.name = name } }

// WithLogger sets the logger.
func WithLogger(l logr.Logger) Option { return func(p *Provider) { p.log = l } }

// WithKubeconfig records where the management cluster was reached from
// (a kubeconfig file and context; no credentials), so `faultline recover`
// can reach it again after a crash.
func WithKubeconfig(path, context string) Option {
	return func(p *Provider) { p.kubeconfig, p.context = path, context }
}

// WithVCenter lets VM faults and probes reach the Machines' VMs.
func WithVCenter(vc *vsphere.Provider) Option { return func(p *Provider) { p.vc = vc } }

// New returns a provider over the management cluster c reads. c's scheme
// must know Cluster API's core and KCP types. A c that can also watch
// (client.WithWatch) makes waits react to Machine changes at once instead
// of at the next poll.
func New(c client.Client, opts ...Option) *Provider {
	p := &Provider{
		name: "capi", c: c, log: logr.Discard(), probeTimeout: 5 * time.Second,
		workloads: map[types.NamespacedName]client.Client{}, vms: map[string]providers.Object{},
	}
	p.ObjectStore = ObjectStore{Cluster: p.clusterClient}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Client is the management cluster's client the provider reads with.
func (p *Provider) Client() client.Client { return p.c }

// Name implements providers.Provider.
func (p *Provider) Name() string { return p.name }

// Ref implements providers.Describer: the kubeconfig file and context the
// management cluster was reached with and, when VM faults are possible, the
// vCenter (never credentials).
func (p *Provider) Ref() providers.ProviderRef {
	ref := providers.ProviderRef{Name: p.name, Config: map[string]string{}}
	if p.vc != nil {
		ref = p.vc.Ref()
		ref.Name = p.name
	}
	if ref.Config == nil {
		ref.Config = map[string]string{}
	}
	if p.kubeconfig != "" {
		ref.Config[RefKubeconfig] = p.kubeconfig
	}
	if p.context != "" {
		ref.Config[RefContext] = p.context
	}
	return ref
}

// The ProviderRef.Config keys Ref sets.
const (
	RefKubeconfig = "kubeconfig"
	RefContext    = "context"
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
	var out []providers.Object
	for i := range list.Items {
		m := &list.Items[i]
		ok, err := p.matches(ctx, m, sel)
		if err != nil {
			return nil, err
		}
		if ok && m.DeletionTimestamp.IsZero() {
			out = append(out, p.object(m, list.Items))
		}
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
			providers.AttrNode: nodeName(m), providers.AttrRole: role,
		},
	}
	if role == providers.RoleControlPlane {
		// kubeadm runs a stacked etcd member on every control plane.
		obj.Attributes[providers.AttrEtcdCluster] = m.Namespace + "/" + owner
		obj.Attributes[providers.AttrEtcdMembers] = strconv.Itoa(len(siblings))
	}
	return obj
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

// Watch implements providers.Watcher: it notifies on every change to a
// Machine of obj's cluster (a replacement appearing is a change to another
// Machine than obj). The channel closes when ctx ends or the watch breaks;
// waits then poll.
func (p *Provider) Watch(ctx context.Context, obj providers.Object) (<-chan struct{}, error) {
	wc, ok := p.c.(client.WithWatch)
	if !ok {
		return nil, fmt.Errorf("watch Machines: the management cluster client cannot watch: %w", providers.ErrUnsupported)
	}
	w, err := wc.Watch(ctx, &clusterv1.MachineList{}, client.InNamespace(obj.Attributes[providers.AttrNamespace]),
		client.MatchingLabels{clusterv1.ClusterNameLabel: obj.Attributes[providers.AttrCluster]})
	if err != nil {
		return nil, fmt.Errorf("watch Machines of cluster %s: %w", obj.Attributes[providers.AttrCluster], err)
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.ResultChan():
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default: // one notification is already queued
				}
			}
		}
	}()
	return out, nil
}

// clusterClient is the management cluster's client, or the workload
// cluster's of scope with the probe timeout: the ObjectStore's Cluster.
func (p *Provider) clusterClient(ctx context.Context, scope providers.Object, cluster string) (client.Client, time.Duration, error) {
	if cluster != "workload" {
		return p.c, 0, nil
	}
	c, err := p.workload(ctx, scope.Attributes[providers.AttrNamespace], scope.Attributes[providers.AttrCluster])
	return c, p.probeTimeout, err
}

// Machine implements providers.ClusterAPI.
func (p *Provider) Machine(ctx context.Context, obj providers.Object) (providers.MachineState, error) {
	m := &clusterv1.Machine{}
	err := p.c.Get(ctx, client.ObjectKey{Namespace: obj.Attributes[providers.AttrNamespace], Name: obj.Name}, m)
	if apierrors.IsNotFound(err) || (err == nil && string(m.UID) != obj.ID) {
		return providers.MachineState{Name: obj.Name, Gone: true}, nil
	}
	if err != nil {
		return providers.MachineState{}, fmt.Errorf("get Machine %s: %w", obj.Name, err)
	}
	return p.state(ctx, m)
}

func (p *Provider) state(ctx context.Context, m *clusterv1.Machine) (providers.MachineState, error) {
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
	if st.Node == "" {
		return st, nil
	}
	node, err := p.node(ctx, m)
	if err != nil {
		// A workload cluster that cannot be read does not make the
		// Machine's own state unreadable: report the Node as unknown.
		st.NodeReady, st.NodeMessage = "Unknown", "workload cluster unreadable: "+err.Error()
		return st, nil
	}
	if node == nil {
		return st, nil
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			st.NodeReady, st.NodeMessage = string(c.Status), c.Message
			st.Stamps["node.Ready.lastTransitionTime"] = c.LastTransitionTime.Time
		}
	}
	return st, nil
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
		st, err := p.state(ctx, &machines[i])
		if err != nil {
			return nil, err
		}
		out = append(out, st)
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
		st, err := p.state(ctx, &machines[i])
		if err != nil {
			return o, err
		}
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
	c, err := p.workload(ctx, obj.Attributes[providers.AttrNamespace], obj.Attributes[providers.AttrCluster])
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
	c, err := p.workload(ctx, m.Namespace, m.Spec.ClusterName)
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

// workload returns a client of a workload cluster, built once from the
// kubeconfig Secret Cluster API keeps for it.
func (p *Provider) workload(ctx context.Context, ns, cluster string) (client.Client, error) {
	if c := p.pairedWorkload; c != nil {
		if p.readOnly {
			return readOnlyClient{c}, nil
		}
		return c, nil
	}
	key := types.NamespacedName{Namespace: ns, Name: cluster}
	p.mu.Lock()
	c, ok := p.workloads[key]
	p.mu.Unlock()
	if ok {
		return c, nil
	}
	s, err := secret.GetFromNamespacedName(ctx, p.c, key, secret.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig Secret of cluster %s: %w", key, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[secret.KubeconfigDataName])
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of cluster %s: %w", key, err)
	}
	cfg.Timeout = p.probeTimeout
	// Probes poll several Machines every few hundred milliseconds; client-go's
	// default of 5 requests per second would make them queue, and a queued
	// reading at the end of a window fails for want of time, not because
	// of the cluster.
	cfg.QPS, cfg.Burst = 50, 100
	c, err = client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client for cluster %s: %w", key, err)
	}
	if p.readOnly {
		c = readOnlyClient{c}
	}
	p.mu.Lock()
	p.workloads[key] = c
	p.mu.Unlock()
	return c, nil
}

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
		return providers.Object{}, fmt.Errorf("Machine %s has no providerID yet: %w", obj.Name, providers.ErrNotFound)
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

func deref(p *int32) int32 {
	if p == nil {
		return 1 // Cluster API's default replica count
	}
	return *p
}
