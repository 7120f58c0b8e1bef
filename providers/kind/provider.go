package kind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
)

// The labels kind puts on its node containers.
const (
	labelCluster = "io.x-k8s.kind.cluster"
	labelRole    = "io.x-k8s.kind.role"
)

// NodeKind is the Kind of the objects the provider resolves: a kind node
// container, named like its Kubernetes Node.
const NodeKind = "KindNode"

// Network is the docker network kind puts its nodes on.
const Network = "kind"

// Provider injects faults into the nodes of one kind cluster through docker
// and reads the cluster through its API server. It implements VMPower (a
// node container's state: kill, stop, pause, start), VMNetwork (disconnect
// from the kind network), NodeKubelet, NodeStaticPods, Nodes, Objects and
// ObjectWrites.
type Provider struct {
	cluster    string
	docker     Docker
	c          client.Client
	kubeconfig string
	log        logr.Logger
	timeout    time.Duration
	capi.ObjectStore
}

var (
	_ providers.Provider       = (*Provider)(nil)
	_ providers.VMPower        = (*Provider)(nil)
	_ providers.VMNetwork      = (*Provider)(nil)
	_ providers.NodeKubelet    = (*Provider)(nil)
	_ providers.NodeStaticPods = (*Provider)(nil)
	_ providers.Nodes          = (*Provider)(nil)
	_ providers.Objects        = (*Provider)(nil)
	_ providers.ObjectWriter   = (*Provider)(nil)
	_ providers.Describer      = (*Provider)(nil)
	_ providers.Workloads      = (*Provider)(nil)
)

// Option configures a Provider.
type Option func(*Provider)

// WithDocker replaces the docker CLI (tests pass a fake).
func WithDocker(d Docker) Option { return func(p *Provider) { p.docker = d } }

// WithLogger sets the logger.
func WithLogger(l logr.Logger) Option { return func(p *Provider) { p.log = l } }

// WithKubeconfig records the kubeconfig file c came from, for the journal.
func WithKubeconfig(path string) Option { return func(p *Provider) { p.kubeconfig = path } }

// New returns a provider over the kind cluster named cluster, whose API
// server c reaches.
func New(cluster string, c client.Client, opts ...Option) *Provider {
	p := &Provider{cluster: cluster, docker: ExecDocker{}, c: c, log: logr.Discard(), timeout: 5 * time.Second}
	p.ObjectStore = capi.ObjectStore{Cluster: p.clusterClient}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return Name }

// Cluster is the kind cluster's name.
func (p *Provider) Cluster() string { return p.cluster }

// Client is the cluster's API client.
func (p *Provider) Client() client.Client { return p.c }

// Ref implements providers.Describer: `faultline recover` finds the
// cluster again by its name (JournalRecord).
func (p *Provider) Ref() providers.ProviderRef {
	return JournalRecord{Cluster: p.cluster, Kubeconfig: p.kubeconfig}.Ref()
}

// Name is the kind provider's name, in journals and on the command line.
const Name = "kind"

// JournalRecord is what a journal keeps about the kind cluster a fault
// went to (Record is faultline's record of a cluster it created).
type JournalRecord struct {
	Cluster, Kubeconfig string
}

// Ref is the record as a journal keeps it.
func (r JournalRecord) Ref() providers.ProviderRef {
	cfg := map[string]string{"cluster": r.Cluster}
	if r.Kubeconfig != "" {
		cfg["kubeconfig"] = r.Kubeconfig
	}
	return providers.ProviderRef{Name: Name, Target: "kind-" + r.Cluster, Config: cfg}
}

// JournalRecordOf reads the record back from a journal's ProviderRef.
func JournalRecordOf(ref providers.ProviderRef) JournalRecord {
	return JournalRecord{Cluster: ref.Config["cluster"], Kubeconfig: ref.Config["kubeconfig"]}
}

func (p *Provider) clusterClient(_ context.Context, _ providers.Object, cluster string) (client.Client, time.Duration, error) {
	if cluster != "workload" {
		return nil, 0, fmt.Errorf("a kind cluster has no %s cluster, only the workload one: %w", cluster, providers.ErrUnsupported)
	}
	return p.c, p.timeout, nil
}

// container is one node container as `docker ps` lists it.
type container struct {
	ID, Name, Role, State string
}

// containers lists the cluster's node containers, sorted by name.
func (p *Provider) containers(ctx context.Context) ([]container, error) {
	out, err := p.docker.Run(ctx, "ps", "--all", "--no-trunc",
		"--filter", "label="+labelCluster+"="+p.cluster,
		"--format", `{{.ID}}\t{{.Names}}\t{{.Label "`+labelRole+`"}}\t{{.State}}`)
	if err != nil {
		return nil, fmt.Errorf("list the nodes of kind cluster %s: %w", p.cluster, err)
	}
	var list []container
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			continue
		}
		list = append(list, container{ID: f[0], Name: f[1], Role: f[2], State: f[3]})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

// Resolve implements providers.Provider over the cluster's node
// containers: by role, nodeName, nodeLabels (read from the Nodes) and
// cluster (the kind cluster's name).
func (p *Provider) Resolve(ctx context.Context, sel providers.Selector) ([]providers.Object, error) {
	if sel.MachineDeployment != "" || sel.ControlPlane != "" || sel.ProviderID != "" || sel.UUID != "" || sel.VM != "" || sel.Host != "" {
		return nil, fmt.Errorf("a kind cluster has no Machines, VMs or ESXi hosts; select its nodes by role, nodeName or nodeLabels: %w", providers.ErrUnsupported)
	}
	if sel.Cluster != "" && sel.Cluster != p.cluster {
		return nil, nil
	}
	switch sel.Role {
	case "", "control-plane", "worker":
	default:
		return nil, fmt.Errorf("role %q: expected control-plane or worker", sel.Role)
	}
	list, err := p.containers(ctx)
	if err != nil {
		return nil, err
	}
	controlPlanes := 0
	for _, c := range list {
		if c.Role == providers.RoleControlPlane {
			controlPlanes++
		}
	}
	var out []providers.Object
	for _, c := range list {
		if c.Role == "external-load-balancer" || (sel.Role != "" && c.Role != sel.Role) {
			continue
		}
		if sel.NodeName != "" && c.Name != sel.NodeName {
			continue
		}
		if len(sel.NodeLabels) > 0 {
			ok, err := p.nodeHasLabels(ctx, c.Name, sel.NodeLabels)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		obj := providers.Object{Kind: NodeKind, Name: c.Name, ID: c.ID, Attributes: map[providers.Attribute]string{providers.AttrCluster: p.cluster, providers.AttrRole: c.Role}}
		if c.Role == providers.RoleControlPlane {
			// kubeadm stacks an etcd member on every control plane: the
			// runner keeps faults within quorum with these.
			obj.Attributes[providers.AttrEtcdCluster] = "kind/" + p.cluster
			obj.Attributes[providers.AttrEtcdMembers] = strconv.Itoa(controlPlanes)
		}
		ip, err := p.address(ctx, c.Name)
		if err != nil {
			return nil, err
		}
		if ip != "" {
			obj.Attributes[providers.AttrIP] = ip
		}
		out = append(out, obj)
	}
	return out, nil
}

func (p *Provider) nodeHasLabels(ctx context.Context, name string, labels map[string]string) (bool, error) {
	n := &corev1.Node{}
	if err := p.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get Node %s: %w", name, err)
	}
	for k, v := range labels {
		if n.Labels[k] != v {
			return false, nil
		}
	}
	return true, nil
}

// address is a node's IPv4 address on the kind network ("" when it is not
// on it).
func (p *Provider) address(ctx context.Context, node string) (string, error) {
	out, err := p.docker.Run(ctx, "inspect", "--format", `{{with index .NetworkSettings.Networks "`+Network+`"}}{{.IPAddress}}{{end}}`, node)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// inspect reads a node container's state; gone is true when it no longer
// exists.
func (p *Provider) inspect(ctx context.Context, obj providers.Object) (state struct {
	Status  string
	Running bool
	Paused  bool
}, gone bool, err error) {
	out, err := p.docker.Run(ctx, "inspect", "--format", "{{json .State}}", obj.Name)
	if err != nil {
		var de *DockerError
		if errors.As(err, &de) && strings.Contains(strings.ToLower(de.Stderr), "no such") {
			return state, true, nil
		}
		return state, false, err
	}
	if err := json.Unmarshal(out, &state); err != nil {
		return state, false, fmt.Errorf("read the state of node %s: %w", obj.Name, err)
	}
	return state, false, nil
}

// PowerOff implements providers.VMPower: `docker kill`, the plug pulled.
func (p *Provider) PowerOff(ctx context.Context, obj providers.Object) error {
	st, gone, err := p.inspect(ctx, obj)
	if err != nil || gone || !st.Running {
		return err
	}
	_, err = p.docker.Run(ctx, "kill", obj.Name)
	return err
}

// ShutdownGuest implements providers.VMPower: `docker stop`, which gives
// the node's systemd its grace period.
func (p *Provider) ShutdownGuest(ctx context.Context, obj providers.Object) error {
	_, err := p.docker.Run(ctx, "stop", obj.Name)
	return err
}

// Suspend implements providers.VMPower: `docker pause` freezes every
// process of the node.
func (p *Provider) Suspend(ctx context.Context, obj providers.Object) error {
	st, _, err := p.inspect(ctx, obj)
	if err != nil || st.Paused {
		return err
	}
	return Pause(ctx, p.docker, obj.Name)
}

// Reset implements providers.VMPower: `docker restart`.
func (p *Provider) Reset(ctx context.Context, obj providers.Object) error {
	if _, err := p.docker.Run(ctx, "restart", obj.Name); err != nil {
		return err
	}
	return p.Network().Ensure(ctx)
}

// PowerOn implements providers.VMPower: unpause or start the node, then
// restore its pod network (routes live in the node's network namespace,
// which a restart replaces). Idempotent.
func (p *Provider) PowerOn(ctx context.Context, obj providers.Object) error {
	st, gone, err := p.inspect(ctx, obj)
	switch {
	case err != nil:
		return err
	case gone:
		return fmt.Errorf("node %s of kind cluster %s is gone: %w", obj.Name, p.cluster, providers.ErrNotFound)
	case st.Paused:
		_, err = p.docker.Run(ctx, "unpause", obj.Name)
		return err
	case st.Running:
		return nil
	}
	if _, err := p.docker.Run(ctx, "start", obj.Name); err != nil {
		return err
	}
	return p.Network().Ensure(ctx)
}

// PowerState implements providers.VMPower: running is poweredOn, paused
// suspended, anything else poweredOff.
func (p *Provider) PowerState(ctx context.Context, obj providers.Object) (providers.PowerState, error) {
	st, gone, err := p.inspect(ctx, obj)
	switch {
	case err != nil:
		return "", err
	case gone:
		return "", fmt.Errorf("node %s of kind cluster %s is gone: %w", obj.Name, p.cluster, providers.ErrNotFound)
	case st.Paused:
		return providers.Suspended, nil
	case st.Running:
		return providers.PoweredOn, nil
	}
	return providers.PoweredOff, nil
}

// SetNICConnected implements providers.VMNetwork: the node leaves or
// rejoins the kind network, with the address it had. nic must be "" (a
// node has one adapter).
func (p *Provider) SetNICConnected(ctx context.Context, obj providers.Object, nic string, connected bool) error {
	if nic != "" {
		return fmt.Errorf("nic %q: a kind node has one network, leave nic empty", nic)
	}
	on, err := p.NICConnected(ctx, obj, nic)
	if err != nil || on == connected {
		return err
	}
	if !connected {
		_, err = p.docker.Run(ctx, "network", "disconnect", Network, obj.Name)
		return err
	}
	args := []string{"network", "connect"}
	ip := obj.Attributes[providers.AttrIP]
	if ip != "" {
		args = append(args, "--ip", ip)
	}
	_, err = p.docker.Run(ctx, append(args, Network, obj.Name)...)
	var de *DockerError
	if ip != "" && errors.As(err, &de) && strings.Contains(de.Stderr, "user configured subnets") {
		// A kind network faultline did not create: docker chooses the
		// address. The node is back on the network, but if its address
		// changed its kubelet and certificates name the old one.
		if _, err := p.docker.Run(ctx, "network", "connect", Network, obj.Name); err != nil {
			return err
		}
		now, err := p.address(ctx, obj.Name)
		if err != nil {
			return fmt.Errorf("node %s is back on the %s network, but its address cannot be read to check it is still %s: %w", obj.Name, Network, ip, err)
		}
		if now != ip {
			return fmt.Errorf("node %s is back on the %s network as %s, not %s: the network was not created with a subnet (create kind clusters with 'faultline kind up'), so its address could not be kept", obj.Name, Network, now, ip)
		}
	} else if err != nil {
		return err
	}
	return p.Network().Ensure(ctx)
}

// NICConnected implements providers.VMNetwork.
func (p *Provider) NICConnected(ctx context.Context, obj providers.Object, nic string) (bool, error) {
	if nic != "" {
		return false, fmt.Errorf("nic %q: a kind node has one network, leave nic empty", nic)
	}
	ip, err := p.address(ctx, obj.Name)
	return ip != "", err
}
