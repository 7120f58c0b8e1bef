package lab

import (
	"context"
	"errors"
	"fmt"
	"time"

	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/leftovers"
	"github.com/faultline-dev/faultline/providers/lab/management"
	"github.com/faultline-dev/faultline/providers/lab/nodesim"
	"github.com/faultline-dev/faultline/providers/lab/realnodes"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// A step is one of Start's.
type step struct {
	name string
	do   func(context.Context) error
}

// steps are Start's, in order: each starts one part of the lab from the
// parts before it, and Stop undoes them all.
func (l *Lab) steps(assets string) []step {
	return []step{
		{"vcsim and management plane", func(ctx context.Context) error { return l.startVCenterAndManagement(ctx, assets) }},
		{"node simulator", l.startNodeSimulator},
		{"cluster objects", l.createClusters},
		{"nodes", l.runNodes},
	}
}

// startVCenterAndManagement starts vcsim and the management plane side
// by side: neither needs the other until the node simulator (CAPV has
// vcsim's credentials, which every simulator takes, and reaches vcsim
// through the cluster objects created after). Each part's time is logged
// at V(1).
func (l *Lab) startVCenterAndManagement(ctx context.Context, assets string) error {
	var vcErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		began := time.Now()
		if vcErr = l.startVCenter(ctx); vcErr == nil {
			l.in.Log.V(1).Info("lab start part done", "part", "vcsim", "took", time.Since(began).Round(time.Millisecond).String())
		}
	}()
	began := time.Now()
	err := l.startManagement(ctx, assets)
	if err == nil {
		l.in.Log.V(1).Info("lab start part done", "part", "management plane", "took", time.Since(began).Round(time.Millisecond).String())
	}
	<-done
	return errors.Join(vcErr, err)
}

// startVCenter starts vcsim and logs in to it, and notes its inventory.
func (l *Lab) startVCenter(ctx context.Context) error {
	var err error
	if l.sim, err = vcsim.Start(vcsim.Input{GuestShutdown: l.in.Profile.GuestShutdown, SessionIdle: l.in.Profile.SessionIdle, VMTaskTime: l.in.Profile.VMTaskTime}); err != nil {
		return err
	}
	if err := leftovers.Note(l.dir, l.sim.Outside()...); err != nil {
		return err
	}
	// The lab's own provider reaches vcsim past the gate, which
	// vcenter.unreachable cuts for CAPV alone.
	if l.vc, err = vsphere.New(ctx, l.sim.DirectConfig(), vsphere.WithName(Name), vsphere.WithLogger(l.in.Log)); err != nil {
		return fmt.Errorf("connect to the embedded vcsim: %w", err)
	}
	if l.thumbprint, err = certThumbprint(l.sim.CAFile()); err != nil {
		return err
	}
	l.baseVMs, err = l.vmNames(ctx)
	return err
}

// startManagement starts the management plane, with CAPV logging in to
// vcsim.
func (l *Lab) startManagement(ctx context.Context, assets string) error {
	stack, err := l.in.Stack()
	if err != nil {
		return err
	}
	in := l.managementInput(stack)
	in.Assets = assets
	l.mgmt, err = management.Start(ctx, in)
	return err
}

// ManagementFromState tells whether the management plane started from a
// stored state.
func (l *Lab) ManagementFromState() bool { return l.mgmt.FromState() }

// managementInput is what the management plane of stack needs, CAPV
// logging in to vcsim.
func (l *Lab) managementInput(stack Stack) management.Input {
	return management.Input{
		Dir: l.dir, Profile: l.in.Profile, Stack: stack, State: l.in.State, Warn: l.in.Warn,
		VCUser: vcsim.Username, VCPass: vcsim.Password(),
		Log: l.in.Log.WithName("controllers"),
	}
}

// startNodeSimulator starts the store of the simulated clusters; they
// run once created (runNodes).
func (l *Lab) startNodeSimulator(ctx context.Context) error {
	var err error
	l.nodes, err = nodesim.New(ctx, nodesim.Config{
		VCenter: l.vc.Client(), SetGuestIP: l.sim.SetGuestIP, Management: l.mgmt.Client(),
		Profile: l.in.Profile, Log: l.in.Log.WithName("nodes"), Dir: l.dir,
	})
	return err
}

// createClusters creates each cluster's Cluster API objects: a simulated
// one's API server first, a real one's network and load balancer.
func (l *Lab) createClusters(ctx context.Context) error {
	for _, cs := range l.in.Clusters {
		l.clusters.Set(cs.Key(), cs)
		l.place(cs)
		if !cs.RealNodes() {
			if err := l.createSimulated(ctx, cs); err != nil {
				return err
			}
			continue
		}
		var endpoint infrav1.APIEndpoint
		var kubeadm bootstrapv1.KubeadmConfigSpec
		var err error
		l.real, endpoint, kubeadm, err = realnodes.Prepare(ctx, realnodes.Input{Dir: l.dir, Cluster: cs, Profile: l.in.Profile, Log: l.in.Log})
		if err != nil {
			return err
		}
		if err := createCluster(ctx, l.mgmt.Client(), clusterObjects(cs, l.mgmt.Stack(), l.sim.URL(), l.thumbprint, endpoint, l.in.Profile, &kubeadm)); err != nil {
			return fmt.Errorf("create cluster %s: %w", cs.Name, err)
		}
	}
	return nil
}

// place tells the lab's vCenter where to put the cluster's control-plane
// VMs, the group of its control planes' machine template
// (machineTemplate, spec.lab.placement).
func (l *Lab) place(cs ClusterSpec) {
	policy := map[string]string{labconfig.PlacementSpread: vcsim.Spread, labconfig.PlacementTogether: vcsim.Together}[cs.Placement.ControlPlanes]
	l.sim.SetPlacement(cs.NamespaceOrDefault()+"/"+cs.ControlPlaneName(), vcsim.Placement{Policy: policy, Hosts: cs.Placement.ControlPlaneHosts})
}

// createSimulated adds a cluster whose nodes the simulator plays and
// creates its Cluster API objects.
func (l *Lab) createSimulated(ctx context.Context, cs ClusterSpec) error {
	l.place(cs)
	if err := l.nodes.AddCluster(cs); err != nil {
		return err
	}
	addr, err := l.nodes.Endpoint(cs.Key())
	if err != nil {
		return err
	}
	endpoint := infrav1.APIEndpoint{Host: "127.0.0.1", Port: int32(addr.Port)}
	if err := createCluster(ctx, l.mgmt.Client(), clusterObjects(cs, l.mgmt.Stack(), l.sim.URL(), l.thumbprint, endpoint, l.in.Profile, nil)); err != nil {
		return fmt.Errorf("create cluster %s: %w", cs.Key(), err)
	}
	return nil
}

// runNodes runs the node simulator and the real nodes until Stop, and
// makes the lab's provider.
func (l *Lab) runNodes(ctx context.Context) error {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.runCtx, l.cancel = sctx, cancel
	go func() {
		defer close(l.done)
		l.nodes.Run(sctx, 200*time.Millisecond)
	}()
	wc, err := client.NewWithWatch(l.mgmt.Config(), client.Options{Scheme: l.mgmt.Scheme()})
	if err != nil {
		return fmt.Errorf("management cluster client: %w", err)
	}
	l.provider = &Provider{Provider: capi.New(wc, capi.WithName(Name), capi.WithVCenter(l.vc), capi.WithLogger(l.in.Log)), lab: l, nodes: l.nodes, real: l.real}
	if l.real == nil {
		return nil
	}
	in := realnodes.RunInput{
		VCenter: l.vc.Client(), SetGuestIP: l.sim.SetGuestIP, Management: l.mgmt.Client(), Every: 500 * time.Millisecond,
		Workload: func(ctx context.Context) (client.Client, error) {
			return l.provider.Workload(ctx, Namespace, l.real.Cluster())
		},
	}
	l.realDone = make(chan struct{})
	go func() {
		defer close(l.realDone)
		l.real.Run(sctx, in)
	}()
	return nil
}

// Queues are the work queues of the management plane's controllers.
type Queues = management.Queues

// Queues reads the work queues of the management plane's controllers.
func (l *Lab) Queues(ctx context.Context) (Queues, error) { return l.mgmt.Queues(ctx) }
