package lab_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/providers/lab/management"
)

// storedStateLab stores a management state in a folder of the test's,
// from two management planes started fresh at once (as two test
// processes' first labs do: one stores it, the other starts from that
// one's), each of which must then serve its webhooks; then it starts a
// lab of spec that copies the state in: a cold start from the stored
// state.
func storedStateLab(ctx context.Context, t *testing.T, spec lab.ClusterSpec) *lab.Lab {
	t.Helper()
	assets, profile := planeInputs(t)
	state := t.TempDir()
	planes := make([]*management.Plane, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range planes {
		dir := t.TempDir()
		wg.Go(func() {
			planes[i], errs[i] = management.Start(ctx, management.Input{Assets: assets, Dir: dir, Profile: profile, State: state, Log: logr.Discard()})
		})
	}
	wg.Wait()
	for i, m := range planes {
		if errs[i] != nil {
			t.Fatalf("management plane %d: %v", i, errs[i])
		}
		if !m.FromState() {
			t.Errorf("management plane %d did not start again from a stored state", i)
		}
		watchCachesFilled(ctx, t, m)
		servesWebhooks(ctx, t, m)
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	if kept, err := os.ReadDir(state); err != nil || len(kept) != 1 {
		t.Fatalf("states kept in %s: %v, %v; want one", state, kept, err)
	}
	l := labtest.StartInput(t, lab.Input{Clusters: []lab.ClusterSpec{spec}, State: state})
	if !l.ManagementFromState() {
		t.Fatal("the lab did not start from the stored state")
	}
	return l
}

// planeInputs are the envtest binaries and the default profile a
// management plane of a test starts with.
func planeInputs(t *testing.T) (string, lab.Profile) {
	t.Helper()
	assets, err := lab.FindAssets("")
	if err != nil {
		t.Fatal(err)
	}
	profile, err := lab.ProfileNamed(lab.DefaultProfile)
	if err != nil {
		t.Fatal(err)
	}
	return assets, profile
}

// servesWebhooks creates a Cluster through m's defaulting and validating
// webhooks and reads it back in v1beta1 through its conversion webhook:
// all three point at m's webhook server.
func servesWebhooks(ctx context.Context, t *testing.T, m *management.Plane) {
	t.Helper()
	c, err := client.New(m.Config(), client.Options{Scheme: m.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "webhooks"}}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c"}, Spec: clusterv1.ClusterSpec{
		Paused:            ptr.To(true),
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "VSphereCluster", Name: "c"},
	}}
	if err := errors.Join(c.Create(ctx, ns), c.Create(ctx, cl)); err != nil {
		t.Fatalf("create a Cluster through the webhooks: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cl), &clusterv1beta1.Cluster{}); err != nil {
		t.Fatalf("read a Cluster as v1beta1 through the conversion webhook: %v", err)
	}
}

// watchCachesFilled checks that kube-apiserver answers a list from the
// watch cache (resourceVersion 0) of every CRD of m at once, not with 429
// "Retry-After" (a cache still filling): a controller started now waits
// no second for its first watch.
func watchCachesFilled(ctx context.Context, t *testing.T, m *management.Plane) {
	t.Helper()
	var crds apiextensionsv1.CustomResourceDefinitionList
	c, err := client.New(m.Config(), client.Options{Scheme: m.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(m.Config())
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds.Items {
		for _, v := range crd.Spec.Versions {
			err := rc.Get().AbsPath("apis", crd.Spec.Group, v.Name, crd.Spec.Names.Plural).
				Param("resourceVersion", "0").MaxRetries(0).Do(ctx).Error()
			if err != nil {
				t.Errorf("list %s %s from the watch cache: %v", crd.Name, v.Name, err)
			}
		}
	}
	if len(crds.Items) == 0 {
		t.Error("the management plane has no CRDs")
	}
}

// planeOf is the management plane itself: its CRDs with their served
// versions, its webhook configurations with their webhooks, and its
// namespaces.
func planeOf(ctx context.Context, t *testing.T, l *lab.Lab) []string {
	t.Helper()
	var out []string
	var crds apiextensionsv1.CustomResourceDefinitionList
	var mutating admissionv1.MutatingWebhookConfigurationList
	var validating admissionv1.ValidatingWebhookConfigurationList
	var namespaces corev1.NamespaceList
	for _, list := range []client.ObjectList{&crds, &mutating, &validating, &namespaces} {
		if err := l.Client().List(ctx, list); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range crds.Items {
		for _, v := range c.Spec.Versions {
			out = append(out, "crd "+c.Name+" "+v.Name)
		}
	}
	for _, w := range mutating.Items {
		for _, h := range w.Webhooks {
			out = append(out, "mutating "+w.Name+" "+h.Name)
		}
	}
	for _, w := range validating.Items {
		for _, h := range w.Webhooks {
			out = append(out, "validating "+w.Name+" "+h.Name)
		}
	}
	for _, n := range namespaces.Items {
		out = append(out, "namespace "+n.Name)
	}
	slices.Sort(out)
	return out
}

// TestIntegrationCorruptStoredState: a stored state whose webhook key was
// changed (every later start failed with "connection refused" until it was
// deleted by hand) or whose etcd database is a FIFO (every later start
// hung, --timeout and SIGTERM ignored) is discarded with a warning naming
// the file, and the start makes it again and serves its webhooks.
func TestIntegrationCorruptStoredState(t *testing.T) {
	labtest.Require(t)
	ctx := context.Background()
	assets, profile := planeInputs(t)
	state := t.TempDir()
	start := func() []string {
		var warned []string
		m, err := management.Start(ctx, management.Input{Assets: assets, Dir: t.TempDir(), Profile: profile, State: state, Log: logr.Discard(),
			Warn: func(s string) { warned = append(warned, s) }})
		if err != nil {
			t.Fatal(err)
		}
		servesWebhooks(ctx, t, m)
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		return warned
	}
	if warned := start(); len(warned) != 0 {
		t.Fatalf("a fresh start warned: %q", warned)
	}
	folders, err := filepath.Glob(filepath.Join(state, "*", "webhook", "tls.key"))
	if err != nil || len(folders) != 1 {
		t.Fatalf("stored webhook keys: %v, %v", folders, err)
	}
	folder := filepath.Dir(filepath.Dir(folders[0]))
	for _, c := range []struct {
		name, file string
		change     func(path string) error
	}{
		{"key changed", filepath.Join("webhook", "tls.key"), func(p string) error { return os.WriteFile(p, []byte("not a key"), 0o600) }},
		{"a FIFO", filepath.Join("member", "snap", "db"), func(p string) error { return errors.Join(os.Remove(p), syscall.Mkfifo(p, 0o600)) }},
	} {
		if err := c.change(filepath.Join(folder, c.file)); err != nil {
			t.Fatal(err)
		}
		if warned := start(); len(warned) != 1 || !strings.Contains(warned[0], "the stored management state "+folder+" is discarded") || !strings.Contains(warned[0], c.file) {
			t.Errorf("%s: warned %q, want the state discarded naming %s", c.name, warned, c.file)
		}
	}
}
