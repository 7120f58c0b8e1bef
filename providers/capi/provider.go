package capi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// cluster (namespace/name, "" every one) scopes the vCenter that
	// vcenter.unreachable cuts; probeImage proves the cut (WithCut).
	cluster, probeImage string

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

// WithCut says what vcenter.unreachable cuts on this management cluster:
// CAPV's way to the vCenter the objects of cluster (namespace/name, ""
// every one) name, proven first by a probe pod of image, faultline's
// image on the cluster's nodes ("" refuses the fault).
func WithCut(cluster, image string) Option {
	return func(p *Provider) { p.cluster, p.probeImage = cluster, image }
}

// WithVCenter lets VM faults and probes reach the Machines' VMs.
func WithVCenter(vc *vsphere.Provider) Option { return func(p *Provider) { p.vc = vc } }

// New returns a provider over the management cluster c reads. c's scheme
// must know Cluster API's core and KCP types. A c that can also watch
// (client.WithWatch) makes waits react to Machine changes at once instead
// of at the next poll.
func New(c client.Client, opts ...Option) *Provider {
	p := &Provider{
		name: Name, c: c, log: logr.Discard(), probeTimeout: 5 * time.Second,
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

// Ref implements providers.Describer: the Record of the management
// cluster the provider reaches and, when VM faults are possible, its
// vCenter (never credentials).
func (p *Provider) Ref() providers.ProviderRef {
	r := Record{Kubeconfig: p.kubeconfig, Context: p.context}
	if p.vc != nil {
		vc := p.vc.Record()
		r.VCenter = &vc
	}
	if p.kubeconfig != "" {
		// Read again at each fault: what is recorded is the server the
		// fault went to. Left out when unreadable; recover then refuses.
		if server, ca, err := Identity(p.kubeconfig, p.context); err == nil {
			r.Server, r.CASHA256 = server, ca
		}
	}
	ref := r.Ref()
	ref.Name = p.name
	return ref
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
	c, err := p.Workload(ctx, scope.Attributes[providers.AttrNamespace], scope.Attributes[providers.AttrCluster])
	return c, p.probeTimeout, err
}

// Workload returns a client of a workload cluster, built once from the
// kubeconfig Secret Cluster API keeps for it.
func (p *Provider) Workload(ctx context.Context, ns, cluster string) (client.Client, error) {
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

func deref(p *int32) int32 {
	if p == nil {
		return 1 // Cluster API's default replica count
	}
	return *p
}
