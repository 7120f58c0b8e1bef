package lab

import (
	"context"
	"crypto/sha1" //nolint:gosec // vSphere thumbprints are SHA-1 by definition
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/management"
	"github.com/faultline-dev/faultline/providers/lab/nodesim"
	"github.com/faultline-dev/faultline/providers/lab/realnodes"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/simulator"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers/vsphere"
)

// Input configures Start.
type Input struct {
	// Assets is the folder holding kube-apiserver and etcd; FindAssets
	// looks in the usual places when it is empty.
	Assets string
	// Dir is the lab's folder (kubeconfigs, etcd data, certificates); a
	// new temporary folder, removed by Stop, when empty.
	Dir      string
	Profile  Profile
	Clusters []ClusterSpec
	// State is the folder of stored management states
	// (management.Input.State): "" is the default, "off" starts fresh.
	State string
	Log   logr.Logger
	// Warn, when set, is told what the user should know that stops
	// nothing: a stored state discarded.
	Warn func(string)
}

// Validate checks the input.
func (in Input) Validate() error {
	var errs []error
	if len(in.Clusters) == 0 {
		errs = append(errs, errors.New("at least one cluster is required"))
	}
	seen := map[string]bool{}
	real := 0
	for _, c := range in.Clusters {
		if c.RealNodes() {
			real++
			if c.NamespaceOrDefault() != Namespace {
				errs = append(errs, fmt.Errorf("cluster %s: namespace %s: a cluster with real nodes is in namespace %s", c.Name, c.Namespace, Namespace))
			}
		}
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[c.Name] {
			errs = append(errs, fmt.Errorf("cluster %s: named twice", c.Name))
		}
		seen[c.Name] = true
	}
	if _, err := in.Stack(); err != nil {
		errs = append(errs, err)
	}
	if real > 1 {
		errs = append(errs, fmt.Errorf("%d clusters with real nodes: a lab runs one (it has one control-plane endpoint)", real))
	}
	if in.Profile.Name == "" {
		errs = append(errs, fmt.Errorf("profile is required: one of %s", strings.Join(labconfig.ProfileNames(), ", ")))
	}
	return errors.Join(errs...)
}

// Stack is the release the lab's management plane runs, its clusters'
// (spec.lab.release); they must agree: a lab has one management plane.
func (in Input) Stack() (labconfig.Stack, error) {
	if len(in.Clusters) == 0 {
		return labconfig.DefaultStack(), nil
	}
	stack, err := in.Clusters[0].Release.Resolve()
	if err != nil {
		return stack, fmt.Errorf("cluster %s: release %w", in.Clusters[0].Name, err)
	}
	for _, c := range in.Clusters[1:] {
		if !c.Release.SameStack(in.Clusters[0].Release) {
			return stack, fmt.Errorf("cluster %s: release %q, but cluster %s's is %q: a lab runs one stack", c.Name, c.Release, in.Clusters[0].Name, in.Clusters[0].Release)
		}
	}
	return stack, nil
}

// Lab is the embedded Cluster API lab: a real management cluster with the
// real Cluster API and CAPV controllers, vcsim as vCenter, and workload
// clusters whose Nodes, etcd members and API servers the node simulator
// runs from their VMs' state.
type Lab struct {
	in     Input
	dir    string
	ownDir bool
	// record is the lab's entry in the user's lab records.
	record Record
	sim    *VCSim
	vc     *vsphere.Provider
	mgmt   *management.Plane
	// clusters are the lab's clusters now, by namespace/name: those of
	// in, then Renew's.
	clusters *labconfig.Map[ClusterSpec]
	// renewMu makes one Renew or Prepare at a time; prepared are the
	// clusters Prepare started, by key.
	renewMu  sync.Mutex
	prepared map[string]creation
	// fresh counts the namespaces FreshSpec gave.
	fresh int
	// baseVMs are the VMs vcsim's inventory has before any cluster's:
	// Renew removes every other VM no cluster owns.
	baseVMs    map[string]bool
	thumbprint string
	nodes      *nodesim.Sim
	// real runs the VMs of the cluster whose nodes are containers.
	real     *realnodes.Nodes
	realDone chan struct{}
	provider *Provider
	// runCtx lives as long as the lab (Stop cancels it).
	runCtx context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// Start brings the lab up as kind's create does, an ordered list of steps
// (start.go), and on a failure stops what the steps before made. It
// returns once its clusters' objects are created; WaitReady waits for
// their Machines.
func Start(ctx context.Context, in Input) (l *Lab, err error) {
	if in.Log.GetSink() == nil {
		in.Log = logr.Discard()
	}
	in.Log = withoutBodies(in.Log)
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	assets, err := management.FindAssets(in.Assets)
	if err != nil {
		return nil, err
	}
	l = &Lab{in: in, dir: in.Dir, clusters: labconfig.NewMap[ClusterSpec](), prepared: map[string]creation{}, done: make(chan struct{})}
	if l.dir == "" {
		if l.dir, err = os.MkdirTemp("", "faultline-lab-"); err != nil {
			return nil, fmt.Errorf("lab folder: %w", err)
		}
		l.ownDir = true
	}
	// Recorded before anything is started, so that whatever a crash
	// leaves is found by `faultline lab down`.
	if l.record, err = record(l.dir); err != nil {
		if l.ownDir {
			err = errors.Join(err, os.RemoveAll(l.dir))
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Stop(context.WithoutCancel(ctx)))
			l = nil
		}
	}()
	for _, step := range l.steps(assets) {
		began := time.Now()
		if err := step.do(ctx); err != nil {
			return l, err
		}
		l.in.Log.V(1).Info("lab start step done", "step", step.name, "took", time.Since(began).Round(time.Millisecond).String())
	}
	return l, nil
}

// WaitReady waits until every cluster has all its Machines Running with
// Ready Nodes, or ctx ends.
func (l *Lab) WaitReady(ctx context.Context) error { return l.WaitReadyReporting(ctx, nil) }

// WaitReadyReporting is WaitReady telling report, when set, each status it
// reads that differs from the last ("cluster lab: 3 of 5 Machines
// Running; pending: ...").
// Clusters that Prepare started for a later Renew or Lease are not waited
// for: they come up meanwhile.
func (l *Lab) WaitReadyReporting(ctx context.Context, report func(status string)) error {
	l.renewMu.Lock()
	var specs []ClusterSpec
	for key, cs := range l.clusters.All() {
		if _, later := l.prepared[key]; !later {
			specs = append(specs, cs)
		}
	}
	l.renewMu.Unlock()
	return l.waitReady(ctx, specs, report)
}

func (l *Lab) waitReady(ctx context.Context, specs []ClusterSpec, report func(string)) error {
	c := l.mgmt.Client()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last string
	for {
		ok, status, err := l.ready(ctx, c, specs)
		if err == nil && ok {
			return nil
		}
		if err != nil {
			status = err.Error()
		}
		if report != nil && status != last {
			report(status)
		}
		last = status
		select {
		case <-ctx.Done():
			return fmt.Errorf("lab not ready: %s: %w", last, context.Cause(ctx))
		case <-t.C:
		}
	}
}

func (l *Lab) ready(ctx context.Context, c client.Client, specs []ClusterSpec) (bool, string, error) {
	var list clusterv1.MachineList
	if err := c.List(ctx, &list); err != nil {
		return false, "", err
	}
	want := map[string]bool{}
	for _, cs := range specs {
		want[cs.Key()] = true
	}
	running := map[string]int{}
	var pending []string
	for _, m := range list.Items {
		key := labconfig.ClusterKey(m.Namespace, m.Spec.ClusterName)
		if !want[key] {
			continue
		}
		if m.Status.Phase == "Running" && m.DeletionTimestamp.IsZero() && m.Status.NodeRef.Name != "" {
			running[key]++
			continue
		}
		why := m.Name + " " + m.Status.Phase
		for _, c := range m.Status.Conditions {
			if c.Status != "True" && c.Message != "" {
				why += " (" + c.Type + ": " + c.Message + ")"
				break
			}
		}
		pending = append(pending, why)
	}
	var waiting []string
	sort.Slice(specs, func(i, j int) bool { return specs[i].Key() < specs[j].Key() })
	for _, cs := range specs {
		want := int(cs.ControlPlanes + cs.Workers)
		if running[cs.Key()] < want {
			waiting = append(waiting, fmt.Sprintf("cluster %s: %d of %d Machines Running", cs.Name, running[cs.Key()], want))
			continue
		}
		kcp := &controlplanev1.KubeadmControlPlane{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cs.NamespaceOrDefault(), Name: cs.ControlPlaneName()}, kcp); err != nil {
			return false, "", err
		}
		if int(deref(kcp.Status.ReadyReplicas)) < cs.ControlPlanes {
			waiting = append(waiting, fmt.Sprintf("cluster %s: %d of %d control planes ready", cs.Name, deref(kcp.Status.ReadyReplicas), cs.ControlPlanes))
		}
	}
	if len(pending) > 0 {
		waiting = append(waiting, "pending: "+strings.Join(pending, "; "))
	}
	return len(waiting) == 0, strings.Join(waiting, "; "), nil
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// SetCNI makes the CNI of a node initialised or not: without it the
// kubelet reports Ready=False with seed 000's "cni plugin not initialized"
// message and the node carries the not-ready taint.
func (l *Lab) SetCNI(node string, ok bool) { l.nodes.SetCNI(node, ok) }

// Client reads and writes the management cluster.
func (l *Lab) Client() client.Client { return l.mgmt.Client() }

// VCenter is the lab's connection to its vCenter simulator.
func (l *Lab) VCenter() *vsphere.Provider { return l.vc }

// Sim is the lab's vCenter simulator.
func (l *Lab) Sim() *VCSim { return l.sim }

// Profile is the time profile the lab runs with.
func (l *Lab) Profile() Profile { return l.in.Profile }

// Dir is the lab's folder.
func (l *Lab) Dir() string { return l.dir }

// Stop stops the node simulator, the controllers, the management cluster,
// the workload endpoints and vcsim, and removes the lab folder it made.
func (l *Lab) Stop(ctx context.Context) error {
	var errs []error
	if l.cancel != nil {
		l.cancel()
		<-l.done
		if l.realDone != nil {
			<-l.realDone
		}
	}
	if l.real != nil {
		errs = append(errs, l.real.Close(ctx))
	}
	if l.mgmt != nil {
		errs = append(errs, l.mgmt.Stop())
	}
	if l.nodes != nil {
		errs = append(errs, l.nodes.Close())
	}
	if l.vc != nil {
		errs = append(errs, l.vc.Close(ctx))
	}
	if l.sim != nil {
		l.sim.Close()
	}
	if l.ownDir {
		errs = append(errs, os.RemoveAll(l.dir))
	}
	errs = append(errs, RemoveRecord(l.record))
	return errors.Join(errs...)
}

// certThumbprint is the SHA-1 thumbprint of a PEM certificate, the form
// CAPV's VSphereCluster.spec.thumbprint takes.
func certThumbprint(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read vcsim certificate: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return "", fmt.Errorf("vcsim certificate %s: no PEM block", file)
	}
	sum := sha1.Sum(block.Bytes) //nolint:gosec // see import
	hex := fmt.Sprintf("%X", sum[:])
	parts := make([]string, 0, len(sum))
	for i := 0; i < len(hex); i += 2 {
		parts = append(parts, hex[i:i+2])
	}
	return strings.Join(parts, ":"), nil
}

var _ = simulator.VPX // vcsim-only code stays in this package
