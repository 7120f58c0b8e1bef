package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// A run against a real API server crashed after deleting an object (a
// runbook step); `faultline recover` reaches the cluster again with the
// kubeconfig and context the journal names, recreates the object from its
// backup file, checks it byte for byte, and marks the fault undone.
func TestIntegrationRecoverObjectOnCluster(t *testing.T) {
	labtest.Require(t)
	assets, err := lab.FindAssets("")
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// What the crashed run left: the backup it wrote before deleting, and
	// a journal whose fault is still pending.
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "policy", "namespace": "default", "labels": map[string]any{"app": "engine"}},
		"data":     map[string]any{"rule": "deny"},
	}
	backup, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "backups", "remove", "configmap-default-policy.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, backup, 0o600); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal.jsonl")
	j, err := engine.OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	scope := providers.Object{Kind: "Machine", Name: "w-1", ID: "uid-w-1"}
	undo := engine.UndoAction{Action: "object.restore", Target: scope, Params: map[string]string{"cluster": "management", "file": file}}
	ref := providers.ProviderRef{Name: "capi", Config: map[string]string{capi.RefKubeconfig: kubeconfig, capi.RefContext: raw.CurrentContext}}
	if err := j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "remove/w-1", Scenario: "t", Kind: "object.delete", Target: &scope, Undo: &undo, Provider: ref}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if code := execute([]string{"recover", journal}, &out, &errOut); code != 0 {
		t.Fatalf("recover: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "policy"}, got); err != nil {
		t.Fatalf("ConfigMap not restored: %v\n%s%s", err, out.String(), errOut.String())
	}
	if got.Data["rule"] != "deny" || got.Labels["app"] != "engine" {
		t.Errorf("restored ConfigMap %+v", got.ObjectMeta)
	}
	entries, err := engine.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if p := engine.Pending(entries); len(p) != 0 {
		t.Errorf("still pending after recover: %+v", p)
	}
	if !strings.Contains(out.String(), "remove/w-1") {
		t.Errorf("recover output does not name the fault:\n%s", out.String())
	}
}
