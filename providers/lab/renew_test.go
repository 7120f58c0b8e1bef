package lab_test

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// A scenario after a destructive one, on a renewed cluster of the same
// warm lab, finds the cluster a fresh lab has: the same objects, Machines
// and Nodes, and in vcsim no VM of the cluster before, even with the
// faults that run left in place (a crashed run's: a VM powered off, a
// kubelet stopped, a VM the scenario made). So does a lab whose
// management plane started from the stored state, with the same plane.
func TestIntegrationRenewMatchesFreshLab(t *testing.T) {
	spec := lab.ClusterSpec{Name: "lab", LabSpec: labconfig.LabSpec{ControlPlanes: 1, Workers: 2, ControlPlaneMHC: ptr.To(true)}}
	l := labtest.StartInput(t, lab.Input{Clusters: []lab.ClusterSpec{spec}, State: "off"})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	fresh := shapeOf(ctx, t, l, spec.Key())
	freshPlane := planeOf(ctx, t, l)

	// The damage.
	workers, err := l.Provider().Resolve(ctx, providers.Selector{Cluster: spec.Key(), Role: "worker"})
	if err != nil || len(workers) != 2 {
		t.Fatalf("workers: %v %v", workers, err)
	}
	if err := l.Provider().PowerOff(ctx, workers[0]); err != nil {
		t.Fatal(err)
	}
	if err := l.Provider().SetKubelet(ctx, workers[1], false); err != nil {
		t.Fatal(err)
	}
	tmpl, err := find.NewFinder(l.VCenter().Client()).VirtualMachine(ctx, "DC0_C0_RP0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	folder, err := find.NewFinder(l.VCenter().Client()).Folder(ctx, "/DC0/vm")
	if err != nil {
		t.Fatal(err)
	}
	task, err := tmpl.Clone(ctx, folder, "made-by-a-scenario", types.VirtualMachineCloneSpec{})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}

	renewed := spec
	renewed.Namespace = "renewed"
	began := time.Now()
	if err := l.Renew(ctx, renewed); err != nil {
		t.Fatal(err)
	}
	t.Logf("renewed in %s", time.Since(began).Round(100*time.Millisecond))
	got := shapeOf(ctx, t, l, renewed.Key())
	for _, part := range []struct {
		what          string
		fresh, renewd []string
	}{{"management objects", fresh.Management, got.Management}, {"Nodes", fresh.Nodes, got.Nodes}, {"kube-system pods", fresh.Pods, got.Pods}, {"vcsim VMs", fresh.VMs, got.VMs}} {
		if !slices.Equal(part.fresh, part.renewd) {
			t.Errorf("the renewed cluster's %s differ from a fresh lab's:\nfresh   %q\nrenewed %q", part.what, part.fresh, part.renewd)
		}
	}
	left, err := l.Provider().Resolve(ctx, providers.Selector{Cluster: spec.Key()})
	if err != nil || len(left) != 0 {
		t.Errorf("the old cluster's Machines: %v %v, want none", left, err)
	}
	if err := l.Renew(ctx, renewed); err == nil || !strings.Contains(err.Error(), "namespace renewed is in use") {
		t.Errorf("renewing into a namespace in use: %v", err)
	}

	began = time.Now()
	stored := storedStateLab(ctx, t, spec)
	t.Logf("stored a state and started a lab from it in %s", time.Since(began).Round(100*time.Millisecond))
	if got := shapeOf(ctx, t, stored, spec.Key()); !reflect.DeepEqual(got, fresh) {
		t.Errorf("the cluster of a lab started from the stored state differs from a fresh lab's:\nfresh  %+v\nstored %+v", fresh, got)
	}
	plane := planeOf(ctx, t, stored)
	if !slices.Equal(plane, freshPlane) {
		t.Errorf("the management plane started from the stored state differs from a fresh one:\nfresh  %q\nstored %q", freshPlane, plane)
	}
}

// shape is what a cluster looks like with its random names made
// comparable.
type shape struct {
	Management []string // kind name, and a Machine's phase
	Nodes      []string // name, Ready, taints
	Pods       []string // kube-system's, with their phase
	VMs        []string // vcsim's, with their power state
}

// suffix is the random part of a generated name.
var suffix = regexp.MustCompile(`-[a-z0-9]{5}\b`)

func shapeOf(ctx context.Context, t *testing.T, l *lab.Lab, key string) shape {
	t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	var s shape
	norm := func(v string) string { return suffix.ReplaceAllString(v, "-x") }
	for _, kind := range []string{
		"cluster.x-k8s.io/v1beta2/Cluster", "cluster.x-k8s.io/v1beta2/Machine", "cluster.x-k8s.io/v1beta2/MachineSet",
		"cluster.x-k8s.io/v1beta2/MachineDeployment", "cluster.x-k8s.io/v1beta2/MachineHealthCheck",
		"controlplane.cluster.x-k8s.io/v1beta2/KubeadmControlPlane", "bootstrap.cluster.x-k8s.io/v1beta2/KubeadmConfig",
		"infrastructure.cluster.x-k8s.io/v1beta2/VSphereCluster", "infrastructure.cluster.x-k8s.io/v1beta2/VSphereMachine",
		"infrastructure.cluster.x-k8s.io/v1beta2/VSphereVM", "v1/Secret",
	} {
		list := &unstructured.UnstructuredList{}
		gv, k := kind[:strings.LastIndex(kind, "/")], kind[strings.LastIndex(kind, "/")+1:]
		list.SetAPIVersion(gv)
		list.SetKind(k + "List")
		if err := l.Client().List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			line := k + " " + norm(o.GetName())
			if phase, ok, _ := unstructured.NestedString(o.Object, "status", "phase"); ok && k == "Machine" {
				line += " " + phase
			}
			s.Management = append(s.Management, line)
		}
	}
	wc, err := l.Provider().Workload(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	// The lab is ready once its Machines run; their Nodes turn Ready
	// when their CNI agents start, a moment later.
	var nodes corev1.NodeList
	for {
		if err := wc.List(ctx, &nodes); err != nil {
			t.Fatal(err)
		}
		if allReady(nodes.Items) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster %s: Nodes not all Ready: %v", key, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	for _, n := range nodes.Items {
		ready := "?"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = string(c.Status)
			}
		}
		var taints []string
		for _, tn := range n.Spec.Taints {
			taints = append(taints, tn.Key)
		}
		s.Nodes = append(s.Nodes, fmt.Sprintf("%s Ready=%s taints=%v", norm(n.Name), ready, taints))
	}
	var pods corev1.PodList
	if err := wc.List(ctx, &pods, client.InNamespace("kube-system")); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		s.Pods = append(s.Pods, norm(p.Name)+" "+string(p.Status.Phase))
	}
	vms, err := find.NewFinder(l.VCenter().Client()).VirtualMachineList(ctx, "/...")
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms {
		state, err := vm.PowerState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.VMs = append(s.VMs, norm(vm.Name())+" "+string(state))
	}
	for _, list := range [][]string{s.Management, s.Nodes, s.Pods, s.VMs} {
		slices.Sort(list)
	}
	return s
}

func allReady(nodes []corev1.Node) bool {
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return false
			}
		}
	}
	return len(nodes) > 0
}
