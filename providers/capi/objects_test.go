package capi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/framework"
)

// A runbook on objects: apply a manifest that creates one ConfigMap and
// replaces another, delete a third with a backup, then undo both; the
// cluster ends as it began, and the backups are files.
func TestObjectFaultsRoundTrip(t *testing.T) {
	t.Parallel()
	cm := func(name, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": v}}
	}
	p := newProvider(t, machine("w-1", md, "Running"), cm("replaced", "before"), cm("runbook", "keep me"))
	src := `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  requires: [ClusterAPI, Objects, ObjectWrites]
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
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: created, namespace: ns}
            data: {k: new}
            ---
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: replaced, namespace: ns}
            data: {k: after}
    - name: remove
      inject:
        fault: object.delete
        target: scope
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
	sc, err := framework.Parse("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j, err := framework.OpenJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, err := framework.Run(context.Background(), framework.RunInput{Scenario: sc, Provider: p, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != framework.Pass {
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
