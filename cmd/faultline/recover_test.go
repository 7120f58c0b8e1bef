package main

import (
	"bytes"
	"context"
	"errors"
	"github.com/faultline-dev/faultline/providers/vsphere"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	"github.com/faultline-dev/faultline/session"
)

// A run against a real API server crashed after deleting an object (a
// runbook step); `faultline recover` reaches the cluster again with the
// kubeconfig and context the journal names (once that context is allowed
// and still reaches the server and CA recorded), recreates the object from
// its backup file, checks it byte for byte, and marks the fault undone.
func TestIntegrationRecoverObjectOnCluster(t *testing.T) {
	env := labtest.APIServer(t)
	cfg := env.Config
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
	// The identity capi's provider records at injection.
	server, ca, err := capi.Identity(kubeconfig, raw.CurrentContext)
	if err != nil || ca == "" {
		t.Fatalf("identity: %q %q %v", server, ca, err)
	}
	ref := capi.Record{Kubeconfig: kubeconfig, Context: raw.CurrentContext, Server: server, CASHA256: ca}.Ref()
	if err := j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "remove/w-1", Scenario: "t", Kind: "object.delete", Target: &scope, Undo: &undo, Provider: ref}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// The context must be allowed again, and reach the server the fault
	// went to.
	var out, errOut bytes.Buffer
	if code := execute([]string{"recover", journal}, &out, &errOut); code != exitUsage || !strings.Contains(out.String()+errOut.String(), journal+":1: context \""+raw.CurrentContext+"\" is not allowed") {
		t.Fatalf("recover without --allow-context: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	moved := filepath.Join(dir, "moved.jsonl")
	mj, err := engine.OpenJournal(moved)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := capi.Record{Kubeconfig: kubeconfig, Context: raw.CurrentContext, Server: "https://10.0.0.1:6443", CASHA256: ca}.Ref()
	if err := errors.Join(mj.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "remove/w-1", Kind: "object.delete", Target: &scope, Undo: &undo, Provider: elsewhere}), mj.Close()); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := execute([]string{"recover", "--allow-context", raw.CurrentContext, moved}, &out, &errOut); code != exitUsage || !strings.Contains(out.String()+errOut.String(), "not https://10.0.0.1:6443 where the fault went") {
		t.Fatalf("recover of a fault that went to another server: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := execute([]string{"recover", "--allow-context", raw.CurrentContext, journal}, &out, &errOut); code != 0 {
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

// recover trusts nothing in a journal that would send credentials: an
// entry pointed at another vCenter after faultline sealed it, a sealed one
// whose vCenter is not allowed, and journals sealed with another user's
// key are refused (exit 2, the file and line) before anything is dialled;
// one that is allowed but whose server's certificate cannot be verified
// fails the TLS handshake, whatever insecure the journal says. The test's
// server, on 127.0.0.1, records whether any request (a login carries the
// password) reached it.
func TestRecoverRefusesUntrustedJournal(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(srv.Close)
	t.Setenv(engine.EnvJournalKey, filepath.Join(t.TempDir(), "journal.key"))
	t.Setenv("GOVC_USERNAME", "administrator@vsphere.local")
	t.Setenv("GOVC_PASSWORD", "s3cret-password")
	t.Setenv(session.EnvAllowedVCenters, "")

	write := func(url string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "journal.jsonl")
		j, err := engine.OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		vm := providers.Object{Kind: "VirtualMachine", Name: "vm-1", ID: "vm-1"}
		undo := engine.UndoAction{Action: "vm.power-on", Target: vm}
		ref := providers.ProviderRef{Name: "vsphere", Config: map[string]string{"url": url, "insecure": "true"}}
		if err := j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "off/vm-1", Kind: "vm.power-off", Target: &vm, Undo: &undo, Provider: ref}); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	recoverExit := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := execute(append([]string{"recover", "--timeout", "20s"}, args...), &out, &errOut)
		return code, out.String() + errOut.String()
	}

	tampered := write("https://vc.example.invalid/sdk")
	b, err := os.ReadFile(tampered)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("https://vc.example.invalid/sdk"), []byte(srv.URL+"/sdk"), 1)
	if err := os.WriteFile(tampered, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sealed := write(srv.URL + "/sdk")
	otherKey := filepath.Join(t.TempDir(), "other.key")
	if _, err := engine.LoadJournalKey(otherKey, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"edited after sealing", []string{"--allow-vcenter", "127.0.0.1", tampered}, exitUsage, []string{tampered + ":1:", "changed after faultline wrote it"}},
		{"vCenter not allowed", []string{sealed}, exitUsage, []string{sealed + ":1:", "is not allowed (--allow-vcenter 127.0.0.1"}},
		{"another host's key", []string{"--allow-vcenter", "127.0.0.1", "--journal-key", otherKey, sealed}, exitUsage, []string{sealed + ":1:", "another journal key"}},
		{"certificate not verified", []string{"--allow-vcenter", "127.0.0.1", sealed}, exitInfra, []string{"TLS verification failed", "FAILED"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := recoverExit(c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "s3cret-password") {
				t.Errorf("the password was printed:\n%s", out)
			}
			if n := requests.Load(); n != 0 {
				t.Fatalf("%d requests reached the journal's server", n)
			}
		})
	}
}

// vCenter's certificate renewed between a crash and its recover: the pin
// holds (nothing is sent to a server with another certificate), the
// refusal shows the thumbprint recorded and the one presented now, and
// recover --accept-thumbprint with exactly that one undoes the fault.
func TestIntegrationRecoverRenewedCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: vcsim")
	}
	t.Setenv(engine.EnvJournalKey, filepath.Join(t.TempDir(), "journal.key"))
	t.Setenv(session.EnvAllowedVCenters, "")
	old, err := lab.StartVCSim(lab.VCSimInput{})
	if err != nil {
		t.Fatal(err)
	}
	addr := old.URL().Host
	cfg := old.Config()
	t.Setenv("GOVC_USERNAME", cfg.Username)
	t.Setenv("GOVC_PASSWORD", cfg.Password)
	oldTP, err := vsphere.PresentedThumbprint(t.Context(), old.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.CAFile, cfg.Thumbprint = "", oldTP // trusted by thumbprint, as recover pins it
	p, err := vsphere.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	vms, err := p.Resolve(t.Context(), providers.Selector{VM: "DC0_H0_VM0"})
	if err != nil || len(vms) != 1 {
		t.Fatalf("resolve: %v %v", vms, err)
	}
	journal := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := engine.OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	undo := engine.UndoAction{Action: "vm.power-on", Target: vms[0]}
	if err := errors.Join(j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "off/DC0_H0_VM0", Kind: "vm.power-off", Target: &vms[0], Undo: &undo, Provider: p.Ref()}),
		j.Close(), p.PowerOff(t.Context(), vms[0]), p.Close(t.Context())); err != nil {
		t.Fatal(err)
	}
	old.Close()
	renewed, err := lab.StartVCSim(lab.VCSimInput{Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(renewed.Close)
	newTP, err := vsphere.PresentedThumbprint(t.Context(), renewed.URL())
	if err != nil || newTP == oldTP {
		t.Fatalf("renewed certificate %s (%v), old %s", newTP, err, oldTP)
	}
	recoverExit := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := execute(append([]string{"recover", "--timeout", "30s", "--allow-vcenter", "127.0.0.1"}, append(args, journal)...), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	code, out := recoverExit()
	if code != exitInfra || !strings.Contains(out, "now presents a certificate with thumbprint "+newTP+"; when the fault was injected it presented "+oldTP) ||
		!strings.Contains(out, "recover with --accept-thumbprint "+newTP) {
		t.Errorf("recover after the renewal: exit %d\n%s", code, out)
	}
	if code, out := recoverExit("--accept-thumbprint", oldTP); code != exitInfra {
		t.Errorf("--accept-thumbprint of another certificate: exit %d\n%s", code, out)
	}
	if code, out := recoverExit("--accept-thumbprint", newTP); code != 0 || !strings.Contains(out, "off/DC0_H0_VM0 vm.power-off: undone") {
		t.Errorf("--accept-thumbprint NEW: exit %d\n%s", code, out)
	}
}

// A bare recover reads the journals recorded beside the journal key,
// wherever --artifacts put them, besides $ARTIFACTS (here missing).
func TestRecoverFindsRecordedJournals(t *testing.T) {
	t.Setenv(engine.EnvJournalKey, filepath.Join(t.TempDir(), "journal.key"))
	t.Setenv("ARTIFACTS", filepath.Join(t.TempDir(), "none"))
	journal := filepath.Join(t.TempDir(), "elsewhere", "journal.jsonl")
	if err := os.MkdirAll(filepath.Dir(journal), 0o700); err != nil {
		t.Fatal(err)
	}
	j, err := engine.OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	vm := providers.Object{Kind: "VirtualMachine", Name: "vm-1", ID: "vm-1"}
	undo := engine.UndoAction{Action: "vm.power-on", Target: vm}
	ref := providers.ProviderRef{Name: "vsphere", Config: map[string]string{"url": "https://vc.example.invalid/sdk"}}
	if err := errors.Join(j.Append(engine.JournalEntry{Op: engine.OpInject, FaultID: "off/vm-1", Kind: "vm.power-off", Target: &vm, Undo: &undo, Provider: ref}),
		j.Append(engine.JournalEntry{Op: engine.OpDone, FaultID: "off/vm-1", Result: engine.ResultUndone}), j.Close()); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := execute([]string{"recover"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "recover: 1 journal(s) under the journals recorded beside the journal key") || !strings.Contains(out.String(), "nothing to recover: no pending faults in 1 journal(s)") {
		t.Errorf("recover:\n%s%s", out.String(), errOut.String())
	}
}
