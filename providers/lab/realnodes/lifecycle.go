package realnodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// Input is the cluster whose nodes are real, in the lab of folder Dir.
type Input struct {
	Dir     string
	Cluster labconfig.ClusterSpec
	Profile labconfig.Profile
	Log     logr.Logger
}

// Prepare makes the docker network and the load balancer of the cluster
// whose nodes are real, before its objects exist: its control-plane
// endpoint must be valid before KCP creates a Machine. It returns the
// nodes, the endpoint and the nodes' kubeadm configuration; Run runs the
// nodes once the cluster's objects exist, Close removes them.
func Prepare(ctx context.Context, in Input) (*Nodes, infrav1.APIEndpoint, bootstrapv1.KubeadmConfigSpec, error) {
	cs := in.Cluster
	var none infrav1.APIEndpoint
	docker := kind.ExecDocker{}
	if err := kind.Available(ctx, docker); err != nil {
		return nil, none, bootstrapv1.KubeadmConfigSpec{}, fmt.Errorf("cluster %s has real nodes: %w", cs.Name, err)
	}
	image, err := kind.ImageOf(ctx, docker, cs.Version())
	if err != nil {
		return nil, none, bootstrapv1.KubeadmConfigSpec{}, fmt.Errorf("cluster %s has real nodes: %w", cs.Name, err)
	}
	quirks, err := kind.DetectQuirks(ctx, docker, image)
	if err != nil {
		return nil, none, bootstrapv1.KubeadmConfigSpec{}, err
	}
	driver, err := New(ctx, Config{
		Lab: filepath.Base(in.Dir), Image: image, StateFile: stateFile(in.Dir),
		ImageOf: func(ctx context.Context, version string) (string, error) { return kind.ImageOf(ctx, docker, version) },
		Docker:  docker, Quirks: quirks, RebootDelay: in.Profile.Reboot, Log: in.Log.WithName("vmcontainers"),
	})
	if err != nil {
		return nil, none, bootstrapv1.KubeadmConfigSpec{}, err
	}
	n := &Nodes{driver: driver, docker: docker, cluster: cs.Name, cni: cs.CNIName(), booted: map[string]bool{}, waiting: map[string]bool{}, log: in.Log.WithName("realnodes")}
	lb, err := driver.StartLoadBalancer(ctx, apiServerPort)
	if err != nil {
		return nil, none, bootstrapv1.KubeadmConfigSpec{}, errors.Join(err, driver.Close(context.WithoutCancel(ctx)))
	}
	n.endpoint = net.JoinHostPort(lb, fmt.Sprint(apiServerPort))
	return n, infrav1.APIEndpoint{Host: lb, Port: apiServerPort}, kubeadmConfig(in.Profile, quirks), nil
}

// RunInput is what the nodes act through once the cluster's objects
// exist: vcsim (its VMs, and the guest IPs CAPV waits for), the
// management cluster, and the cluster's own API server.
type RunInput struct {
	VCenter    *vim25.Client
	SetGuestIP func(types.ManagedObjectReference, string) error
	Management client.Client
	Workload   func(ctx context.Context) (client.Client, error)
	// Every is the tick: each VM's container follows its VM then.
	Every time.Duration
}

// Run runs the nodes until ctx ends.
func (r *Nodes) Run(ctx context.Context, in RunInput) {
	r.vc, r.setIP, r.mc, r.workload = in.VCenter, in.SetGuestIP, in.Management, in.Workload
	r.run(ctx, in.Every)
}

// Cluster is the name of the cluster whose nodes these are.
func (r *Nodes) Cluster() string { return r.cluster }

// Exec runs cmd in node's container; IsGone tells an error of a container
// that is gone (its VM powered off or destroyed).
func (r *Nodes) Exec(ctx context.Context, node string, cmd ...string) ([]byte, error) {
	return r.docker.Run(ctx, append([]string{"exec", r.driver.ContainerName(node)}, cmd...)...)
}

// Close removes the nodes' containers, load balancer and network.
func (r *Nodes) Close(ctx context.Context) error { return r.driver.Close(ctx) }

// Subnet is the lab's docker network, where the cluster's nodes are.
func (r *Nodes) Subnet() netip.Prefix { return r.driver.Subnet() }
