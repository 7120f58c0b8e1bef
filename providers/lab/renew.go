package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// RemoveTimeout bounds the removal of one cluster by Renew: Cluster API
// deleting its Machines, CAPV its VMs.
const RemoveTimeout = 2 * time.Minute

// Renew gives the lab a fresh simulated cluster of spec s, in the
// namespace s names (which must be new), and removes every other simulated
// cluster, so that a scenario run next finds the cluster a lab started for
// s alone would have: the management plane, its controllers and vcsim
// stay warm, and nothing the scenarios before did to their clusters is
// left. A removed cluster's Cluster is deleted (Cluster API deletes its
// Machines, CAPV their VMs), then what Cluster API leaves in its namespace
// (health checks, templates, Secrets) and the namespace; vcsim keeps only
// its own inventory and the VMs of the clusters left. The cluster is the
// one Prepare started for s, when it did. It returns once s's Machines are
// all Running and the others are gone, or ctx ends.
//
// A cluster with real nodes cannot be renewed: the lab runs them for the
// cluster it started with only.
func (l *Lab) Renew(ctx context.Context, s ClusterSpec) error {
	l.renewMu.Lock()
	defer l.renewMu.Unlock()
	created, ok := l.prepared[s.Key()]
	delete(l.prepared, s.Key())
	if ok && !reflect.DeepEqual(created.spec, s) {
		return fmt.Errorf("renew cluster %s: it was prepared with another spec.lab", s.Key())
	}
	if !ok {
		var err error
		if created, err = l.begin(ctx, s); err != nil {
			return err
		}
	}
	var old []string
	for key, cs := range l.clusters.All() {
		if key != s.Key() && !cs.RealNodes() {
			old = append(old, key)
		}
	}
	slices.Sort(old)
	// A cluster prepared for another Renew goes too, once its objects
	// are all there (a removal racing its creation could leave some).
	var stale []creation
	for key, c := range l.prepared {
		stale = append(stale, c)
		delete(l.prepared, key)
	}
	// The new cluster comes up while the old ones go: neither waits
	// on the other, and a scenario starts only once both are done.
	removed := make(chan error, 1)
	go func() {
		var errs []error
		for _, c := range stale {
			<-c.done
		}
		for _, key := range old {
			errs = append(errs, l.removeCluster(ctx, key))
		}
		errs = append(errs, l.cleanVCenter(ctx))
		removed <- errors.Join(errs...)
	}()
	var err error
	select {
	case err = <-created.done:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if err == nil {
		err = l.waitReady(ctx, []ClusterSpec{s}, nil)
	}
	return errors.Join(err, <-removed)
}

// FreshSpec is a cluster of shape s named name, in a namespace no cluster
// of the lab has had (lab-2, lab-3, ...: the clusters it started with are
// in Namespace), for Renew or Prepare.
func (l *Lab) FreshSpec(name string, s labconfig.LabSpec) ClusterSpec {
	l.renewMu.Lock()
	defer l.renewMu.Unlock()
	return l.freshSpec(name, s)
}

// freshSpec is FreshSpec with renewMu held.
func (l *Lab) freshSpec(name string, s labconfig.LabSpec) ClusterSpec {
	l.fresh++
	return ClusterSpec{Name: name, Namespace: fmt.Sprintf("lab-%d", l.fresh+1), LabSpec: s}
}

// NextSpec is the cluster to Renew the lab with for a scenario of shape s,
// named name: the one Prepare started for that name and shape (prepared
// true), else a new FreshSpec.
func (l *Lab) NextSpec(name string, s labconfig.LabSpec) (spec ClusterSpec, prepared bool) {
	l.renewMu.Lock()
	keys := slices.Sorted(maps.Keys(l.prepared))
	for _, key := range keys {
		if c := l.prepared[key]; c.is(name, s) {
			l.renewMu.Unlock()
			return c.spec, true
		}
	}
	l.renewMu.Unlock()
	return l.FreshSpec(name, s), false
}

// PrepareNext prepares the cluster NextSpec gives for a scenario of shape
// s, named name, unless one is prepared already.
func (l *Lab) PrepareNext(ctx context.Context, name string, s labconfig.LabSpec) (ClusterSpec, error) {
	spec, prepared := l.NextSpec(name, s)
	if prepared {
		return spec, nil
	}
	return spec, l.Prepare(ctx, spec)
}

// Prepare starts the cluster of spec s that a Renew for s will give: it
// comes up while the lab's current cluster still serves a scenario, which
// waits on its controllers far more than it computes. Its namespace must
// be new. The creation outlives ctx, not the lab.
func (l *Lab) Prepare(ctx context.Context, s ClusterSpec) error {
	l.renewMu.Lock()
	defer l.renewMu.Unlock()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	c, err := l.begin(l.runCtx, s)
	if err != nil {
		return err
	}
	l.prepared[s.Key()] = c
	return nil
}

// creation is a cluster being created: done receives the creation's
// error once its objects are.
type creation struct {
	spec  ClusterSpec
	done  chan error
	begun time.Time
}

// is tells whether c is a cluster named name of shape s.
func (c creation) is(name string, s labconfig.LabSpec) bool {
	return c.spec.Name == name && reflect.DeepEqual(c.spec.LabSpec, s)
}

// begin creates the namespace and starts creating the cluster of s.
func (l *Lab) begin(ctx context.Context, s ClusterSpec) (creation, error) {
	if err := s.Validate(); err != nil {
		return creation{}, fmt.Errorf("renew: %w", err)
	}
	if s.RealNodes() {
		return creation{}, fmt.Errorf("renew cluster %s: its nodes would be real, and a lab runs real nodes only for the cluster it started with", s.Key())
	}
	for key, cs := range l.clusters.All() {
		if key == s.Key() || cs.NamespaceOrDefault() == s.NamespaceOrDefault() {
			return creation{}, fmt.Errorf("renew cluster %s: namespace %s is in use; a renewed cluster needs a new one", s.Key(), s.NamespaceOrDefault())
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.NamespaceOrDefault()}}
	if err := l.Client().Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return creation{}, fmt.Errorf("renew: create namespace %s: %w", ns.Name, err)
	}
	l.clusters.Set(s.Key(), s)
	c := creation{spec: s, done: make(chan error, 1), begun: time.Now()}
	go func() { c.done <- l.createSimulated(ctx, s) }()
	return c, nil
}

// removeCluster deletes the cluster of key from the management cluster and
// the lab.
func (l *Lab) removeCluster(ctx context.Context, key string) error {
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, RemoveTimeout)
	defer cancel()
	c := l.Client()
	ok := labconfig.ObjectKey(key)
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ok.Namespace, Name: ok.Name}}
	if err := c.Delete(ctx, cl); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove cluster %s: %w", key, err)
	}
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, ok, &clusterv1.Cluster{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("remove cluster %s: its Cluster is not gone after %s (%s): %w", key, time.Since(began).Round(100*time.Millisecond), l.remaining(context.WithoutCancel(ctx), ok.Namespace), err)
	}
	l.clusters.Remove(key)
	errs := []error{l.nodes.RemoveCluster(key)}
	// Nothing collects garbage in the lab's management cluster (it runs no
	// kube-controller-manager): what Cluster API does not delete itself
	// goes here.
	for _, list := range []client.ObjectList{
		&clusterv1.MachineHealthCheckList{}, &infrav1.VSphereMachineTemplateList{},
		&bootstrapv1.KubeadmConfigTemplateList{}, &corev1.SecretList{}, &corev1.ConfigMapList{},
	} {
		if err := l.deleteAll(ctx, list, ok.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("remove cluster %s: %w", key, err))
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ok.Namespace}}
	if ok.Namespace != Namespace {
		if err := c.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove cluster %s: delete namespace %s: %w", key, ns.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (l *Lab) deleteAll(ctx context.Context, list client.ObjectList, namespace string) error {
	gvk, err := apiutil.GVKForObject(list, l.Client().Scheme())
	if err != nil {
		return err
	}
	obj, err := l.Client().Scheme().New(gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List")))
	if err != nil {
		return err
	}
	if err := l.Client().DeleteAllOf(ctx, obj.(client.Object), client.InNamespace(namespace)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the %ss of namespace %s: %w", strings.TrimSuffix(gvk.Kind, "List"), namespace, err)
	}
	return nil
}

// remaining says which Cluster API objects of namespace are left, and why,
// for a removal that timed out.
func (l *Lab) remaining(ctx context.Context, namespace string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var machines clusterv1.MachineList
	if err := l.Client().List(ctx, &machines, client.InNamespace(namespace)); err != nil {
		return "list its Machines: " + err.Error()
	}
	var left []string
	for _, m := range machines.Items {
		left = append(left, fmt.Sprintf("Machine %s %s, finalizers %v", m.Name, m.Status.Phase, m.Finalizers))
	}
	if len(left) == 0 {
		return "no Machines left"
	}
	return strings.Join(left, "; ")
}

// vmNames are the names of every VM in vcsim's inventory.
func (l *Lab) vmNames(ctx context.Context) (map[string]bool, error) {
	vms, err := find.NewFinder(l.vc.Client()).VirtualMachineList(ctx, "/...")
	if err != nil {
		return nil, fmt.Errorf("list vcsim's VMs: %w", err)
	}
	out := make(map[string]bool, len(vms))
	for _, vm := range vms {
		out[vm.Name()] = true
	}
	return out, nil
}

// cleanVCenter destroys every VM of vcsim that is neither its own
// inventory's nor a VSphereVM's of the lab's clusters: the VMs of removed
// clusters that CAPV left, or that a scenario made.
func (l *Lab) cleanVCenter(ctx context.Context) error {
	// The VMs first: CAPV creates a VSphereVM before its VM, so every VM
	// listed here that a cluster owns has its VSphereVM in the list
	// below.
	vms, err := find.NewFinder(l.vc.Client()).VirtualMachineList(ctx, "/...")
	if err != nil {
		return fmt.Errorf("list vcsim's VMs: %w", err)
	}
	var vsvms infrav1.VSphereVMList
	if err := l.Client().List(ctx, &vsvms); err != nil {
		return fmt.Errorf("list VSphereVMs: %w", err)
	}
	owned := map[string]bool{}
	for _, v := range vsvms.Items {
		owned[v.Name] = true
	}
	var errs []error
	for _, vm := range vms {
		if l.baseVMs[vm.Name()] || owned[vm.Name()] {
			continue
		}
		errs = append(errs, destroyVM(ctx, vm))
	}
	return errors.Join(errs...)
}

func destroyVM(ctx context.Context, vm *object.VirtualMachine) error {
	state, err := vm.PowerState(ctx)
	if err != nil {
		return fmt.Errorf("VM %s: %w", vm.Name(), err)
	}
	if state == types.VirtualMachinePowerStatePoweredOn {
		t, err := vm.PowerOff(ctx)
		if err == nil {
			err = vsphere.WaitTask(ctx, t)
		}
		if err != nil {
			return fmt.Errorf("power off VM %s: %w", vm.Name(), err)
		}
	}
	t, err := vm.Destroy(ctx)
	if err == nil {
		err = vsphere.WaitTask(ctx, t)
	}
	if err != nil {
		return fmt.Errorf("destroy VM %s: %w", vm.Name(), err)
	}
	return nil
}
