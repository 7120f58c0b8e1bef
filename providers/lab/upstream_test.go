package lab_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
)

// TestIntegrationUpstreamControllers: controllers the release's own
// managers always run, which the compiled stack once left out, act on
// both ways of running v1.13: in faultline's process and as the
// release's own binaries. A ClusterResourceSet puts its ConfigMap's
// manifest into the workload cluster (its binding says applied), and a
// VSphereDeploymentZone whose failure domain is tagged in vCenter is
// reconciled Ready, its VSphereFailureDomain owned by it.
func TestIntegrationUpstreamControllers(t *testing.T) {
	labtest.Require(t)
	// Neither lab leaves a key of its own behind in $TMPDIR (envtest's
	// serving certificates used to stay there, one folder a start).
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Cleanup(func() {
		if left, _ := filepath.Glob(filepath.Join(tmp, "envtest-serving-certs*")); len(left) > 0 {
			t.Errorf("left in $TMPDIR after the labs stopped: %v", left)
		}
	})
	for _, stack := range []string{"v1.13", "v1.13-processes"} {
		t.Run(stack, func(t *testing.T) {
			spec := lab.ClusterSpec{Name: "up", LabSpec: labconfig.LabSpec{ControlPlanes: 1, Workers: 1, Release: labconfig.ParseRelease(stack)}}
			l := labtest.StartInput(t, lab.Input{Clusters: []lab.ClusterSpec{spec}})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			t.Run("ClusterResourceSet", func(t *testing.T) { clusterResourceSetApplies(ctx, t, l.Client(), spec) })
			t.Run("VSphereDeploymentZone", func(t *testing.T) { deploymentZoneReady(ctx, t, l) })
		})
	}
}

func clusterResourceSetApplies(ctx context.Context, t *testing.T, c client.Client, spec lab.ClusterSpec) {
	ns := spec.NamespaceOrDefault()
	addon := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon", Namespace: ns},
		Data:       map[string]string{"addon.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-crs\n  namespace: default\ndata:\n  by: clusterresourceset\n"},
	}
	crs := &addonsv1.ClusterResourceSet{
		ObjectMeta: metav1.ObjectMeta{Name: "addon", Namespace: ns},
		Spec: addonsv1.ClusterResourceSetSpec{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.ClusterNameLabel: spec.Name}},
			Resources:       []addonsv1.ResourceRef{{Name: addon.Name, Kind: "ConfigMap"}},
		},
	}
	for _, o := range []client.Object{addon, crs} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	binding := &addonsv1.ClusterResourceSetBinding{}
	waitFor(ctx, t, "the ClusterResourceSetBinding to say the ConfigMap was applied to the workload cluster", func() (bool, string, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: spec.Name}, binding)
		if apierrors.IsNotFound(err) {
			return false, "no binding yet", nil
		} else if err != nil {
			return false, "", err
		}
		for _, b := range binding.Spec.Bindings {
			for _, r := range b.Resources {
				if b.ClusterResourceSetName == crs.Name && r.Name == addon.Name && ptr.Deref(r.Applied, false) {
					return true, "", nil
				}
			}
		}
		return false, fmt.Sprintf("bindings %+v", binding.Spec.Bindings), nil
	})
	if binding.Spec.ClusterName != spec.Name {
		t.Errorf("binding for cluster %q, want %q", binding.Spec.ClusterName, spec.Name)
	}
}

func deploymentZoneReady(ctx context.Context, t *testing.T, l *lab.Lab) {
	// The failure domain's region and zone are vCenter tags on the
	// datacenter and its compute cluster, as an operator sets them up.
	vim := l.VCenter().Client()
	rc := rest.NewClient(vim)
	if err := rc.Login(ctx, url.UserPassword(vcsim.Username, vcsim.Password())); err != nil {
		t.Fatalf("log in to vCenter's REST API: %v", err)
	}
	fnd := find.NewFinder(vim)
	dc, err := fnd.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	fnd.SetDatacenter(dc)
	cc, err := fnd.ClusterComputeResource(ctx, "DC0_C0")
	if err != nil {
		t.Fatal(err)
	}
	m := tags.NewManager(rc)
	for _, tag := range []struct {
		category, name string
		on             mo.Reference
	}{{"k8s-region", "region-a", dc}, {"k8s-zone", "zone-a", cc}} {
		category, err := m.CreateCategory(ctx, &tags.Category{Name: tag.category, Cardinality: "SINGLE"})
		if err != nil {
			t.Fatalf("create tag category %s: %v", tag.category, err)
		}
		if _, err := m.CreateTag(ctx, &tags.Tag{Name: tag.name, CategoryID: category}); err != nil {
			t.Fatalf("create tag %s: %v", tag.name, err)
		}
		if err := m.AttachTag(ctx, tag.name, tag.on.Reference()); err != nil {
			t.Fatalf("attach tag %s: %v", tag.name, err)
		}
	}

	c := l.Client()
	fd := &infrav1.VSphereFailureDomain{
		ObjectMeta: metav1.ObjectMeta{Name: "zone-a"},
		Spec: infrav1.VSphereFailureDomainSpec{
			Region: infrav1.FailureDomain{Name: "region-a", Type: infrav1.DatacenterFailureDomain, TagCategory: "k8s-region"},
			Zone:   infrav1.FailureDomain{Name: "zone-a", Type: infrav1.ComputeClusterFailureDomain, TagCategory: "k8s-zone"},
			Topology: infrav1.Topology{
				Datacenter: "DC0", ComputeCluster: "DC0_C0", Datastore: "LocalDS_0", Networks: []string{"VM Network"},
			},
		},
	}
	dz := &infrav1.VSphereDeploymentZone{
		ObjectMeta: metav1.ObjectMeta{Name: "zone-a"},
		Spec: infrav1.VSphereDeploymentZoneSpec{
			Server: vim.URL().Host, FailureDomain: fd.Name, ControlPlane: ptr.To(true),
			PlacementConstraint: infrav1.PlacementConstraint{ResourcePool: "/DC0/host/DC0_C0/Resources", Folder: "/DC0/vm"},
		},
	}
	for _, o := range []client.Object{fd, dz} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	waitFor(ctx, t, "the VSphereDeploymentZone to be Ready", func() (bool, string, error) {
		// The lab's client reads a cache, which may not have it yet.
		if err := c.Get(ctx, client.ObjectKeyFromObject(dz), dz); apierrors.IsNotFound(err) {
			return false, "not in the lab's cache yet", nil
		} else if err != nil {
			return false, "", err
		}
		return ptr.Deref(dz.Status.Ready, false), fmt.Sprintf("ready %v, conditions %+v", dz.Status.Ready, dz.Status.Conditions), nil
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(fd), fd); err != nil {
		t.Fatal(err)
	}
	owned := false
	for _, o := range fd.OwnerReferences {
		owned = owned || o.Kind == "VSphereDeploymentZone" && o.Name == dz.Name
	}
	if !owned {
		t.Errorf("VSphereFailureDomain owners %+v, want the VSphereDeploymentZone", fd.OwnerReferences)
	}
}

// waitFor polls done every 250ms until it holds, failing the test with
// its last word at ctx's deadline.
func waitFor(ctx context.Context, t *testing.T, what string, done func() (bool, string, error)) {
	t.Helper()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ok, why, err := done()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		last = why
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last: %s", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}
