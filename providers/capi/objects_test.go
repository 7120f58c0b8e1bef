package capi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/scenarios/scenariotest"
)

// installScenario is a scenario that requires requires and whose first
// step, install, applies manifest to the management cluster; the caller
// adds the steps after it.
func installScenario(requires, manifest string) string {
	return `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  requires: [` + requires + `]
  pollInterval: 50ms
  timeout: 20s
  targets:
    - name: scope
      select: {role: worker}
  steps:
    - name: install
      inject:
        fault: object.apply
        target: scope
        params:
          cluster: management
          manifest: |
            ` + strings.ReplaceAll(manifest, "\n", "\n            ")
}

// A runbook on objects: apply a manifest that creates one ConfigMap and
// replaces another, delete a third with a backup, then undo both; the
// cluster ends as it began, and the backups are files. The delete is given
// no target (a standalone object fault).
func TestObjectFaultsRoundTrip(t *testing.T) {
	t.Parallel()
	cm := func(name, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": v}}
	}
	p := newProvider(t, machine("w-1", md, "Running"), cm("replaced", "before"), cm("runbook", "keep me"))
	src := installScenario("ClusterAPI, Objects, ObjectWrites", `apiVersion: v1
kind: ConfigMap
metadata: {name: created, namespace: ns}
data: {k: new}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: replaced, namespace: ns}
data: {k: after}`) + `
    - name: remove
      # A management-cluster object belongs to no Machine: no target.
      inject:
        fault: object.delete
        params: {cluster: management, apiVersion: v1, kind: ConfigMap, namespace: ns, name: runbook}
    - name: removed
      observe:
        phases:
          - name: gone
            when: {probe: object-absent, target: scope, args: {apiVersion: v1, kind: ConfigMap, namespace: ns, name: runbook}}
            within: 5s
          - name: created
            when: {probe: object-present, target: scope, args: {apiVersion: v1, kind: ConfigMap, namespace: ns, name: created}}
            within: 5s
    - name: restore
      undo: {fault: remove}
    - name: revert
      undo: {fault: install}
`
	sc, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j, err := engine.OpenJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, err := engine.Run(context.Background(), engine.RunInput{Scenario: sc, Provider: p, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Reason)
	}
	c := p.Client()
	ctx := context.Background()
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "runbook"}, got); err != nil || got.Data["k"] != "keep me" || got.Labels["app"] != "x" {
		t.Errorf("runbook ConfigMap after restore: %+v %v", got, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "replaced"}, got); err != nil || got.Data["k"] != "before" {
		t.Errorf("replaced ConfigMap after revert: %+v %v", got.Data, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "created"}, got); err == nil {
		t.Errorf("created ConfigMap still there after revert")
	}
	backup, err := os.ReadFile(filepath.Join(dir, "backups", "remove", "configmap-ns-runbook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(backup), "k: keep me") || strings.Contains(string(backup), "resourceVersion") {
		t.Errorf("backup file:\n%s", backup)
	}
}

// An object still being deleted holds up both an apply that would create it
// again and the undo that deleted it: each returns once the object is gone
// (here when a finalizer is released, at the second read of the
// terminating object), so the next scenario finds a clean slate.
func TestObjectApplyWaitsForDeletion(t *testing.T) {
	t.Parallel()
	const finalizer = "faultline.dev/test"
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "held", Finalizers: []string{finalizer}}, Data: map[string]string{"k": "old"}}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clusterv1.AddToScheme, corev1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	reads, releases := 0, 0
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(held, machine("w-1", md, "Running")).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil || key.Name != "held" || obj.GetDeletionTimestamp() == nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if reads++; reads < 2 {
				return nil
			}
			reads = 0
			releases++
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, key, cm); err != nil {
				return err
			}
			cm.Finalizers = nil
			return c.Update(ctx, cm)
		},
	}).Build()
	ctx := context.Background()
	if err := c.Delete(ctx, held.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	p := capi.New(c)
	src := installScenario("Objects, ObjectWrites", `apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: ns, finalizers: [faultline.dev/test]}
data: {k: new}`) + `
    - name: installed
      observe:
        phases:
          - name: replaced
            when: {probe: object-expression, target: scope, args: {cluster: management, apiVersion: v1, kind: ConfigMap, namespace: ns, name: held, expression: "object.data.k == 'new' && !has(object.metadata.deletionTimestamp)"}}
            within: 5s
    - name: revert
      undo: {fault: install}
`
	res := scenariotest.RunText(ctx, t, p, "t.yaml", []byte(src), nil)
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Reason)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "held"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("held ConfigMap after the undo: %v, expected it gone", err)
	}
	if releases != 2 {
		t.Errorf("finalizer released %d times, expected 2 (before the apply, during the undo)", releases)
	}
}
