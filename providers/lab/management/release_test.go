package management

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// TestCompiledStackIsEmbedded: the stack that runs in faultline's process
// is the release whose manifests are embedded (and go.mod's, which
// hack/verify.sh checks against them).
func TestCompiledStackIsEmbedded(t *testing.T) {
	b, err := manifestFS.ReadFile("manifests/VERSIONS")
	if err != nil {
		t.Fatal(err)
	}
	s := labconfig.DefaultStack()
	want := "sigs.k8s.io/cluster-api " + s.ClusterAPI + "\nsigs.k8s.io/cluster-api-provider-vsphere " + s.CAPV + "\n"
	if !s.Compiled || string(b) != want {
		t.Errorf("default stack %+v; embedded manifests:\n%s", s, b)
	}
	for _, st := range labconfig.Stacks[1:] {
		if st.Compiled {
			t.Errorf("stack %s is compiled too: one release links", st.Name)
		}
	}
}

// TestManagerArgs: each manager runs with leader election off, its health
// and metrics on loopback ports of its own, and the profile's intervals;
// Cluster API's gates are not given to CAPV.
func TestManagerArgs(t *testing.T) {
	ms, err := newManagers(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := labconfig.ProfileNamed("compressed")
	if err != nil {
		t.Fatal(err)
	}
	ports := map[int]bool{}
	for _, m := range ms {
		a := strings.Join(m.args(managerFiles{kubeconfig: "k", certDir: "c", credentials: "cr"}, p), " ")
		for _, want := range []string{"--leader-elect=false", "--health-addr=127.0.0.1:", "--diagnostics-address=127.0.0.1:", "--sync-period=" + p.SyncPeriod.String()} {
			if !strings.Contains(a, want) {
				t.Errorf("%s: %s lacks %s", m.name, a, want)
			}
		}
		if gates := strings.Contains(a, "--feature-gates="); gates == (m.name == "capv-manager") {
			t.Errorf("%s: feature gates given: %t: %s", m.name, gates, a)
		}
		for _, port := range []int{m.webhookPort, m.healthPort, m.metricsPort} {
			if ports[port] {
				t.Errorf("port %d given twice", port)
			}
			ports[port] = true
		}
	}
	if len(ms) != 4 {
		t.Errorf("%d managers", len(ms))
	}
}

// TestPointAt: every conversion and every webhook of a stack's manifests
// calls the manager of its provider on 127.0.0.1, trusting the lab's CA.
func TestPointAt(t *testing.T) {
	mf, err := embeddedManifests()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := newManagers(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := mf.pointAt(ms, []byte("CA")); err != nil {
		t.Fatal(err)
	}
	port := map[string]string{}
	for _, m := range ms {
		port[m.provider] = fmt.Sprintf("https://127.0.0.1:%d/", m.webhookPort)
	}
	converted := 0
	for i, crd := range mf.crds {
		if len(crd.Spec.Versions) < 2 {
			continue
		}
		converted++
		cc := crd.Spec.Conversion.Webhook.ClientConfig
		if *cc.URL != port[mf.provider[i]]+"convert" || string(cc.CABundle) != "CA" {
			t.Errorf("%s converts through %s", crd.Name, *cc.URL)
		}
	}
	webhooks := 0
	check := func(name string, cc admissionv1.WebhookClientConfig) {
		webhooks++
		provider, _, _ := strings.Cut(name, "-")
		if cc.URL == nil || !strings.HasPrefix(*cc.URL, port[provider]) || cc.Service != nil || string(cc.CABundle) != "CA" {
			t.Errorf("%s calls %+v", name, cc)
		}
	}
	for _, c := range mf.mutating {
		for _, w := range c.Webhooks {
			check(c.Name, w.ClientConfig)
		}
	}
	for _, c := range mf.validating {
		for _, w := range c.Webhooks {
			check(c.Name, w.ClientConfig)
		}
	}
	if converted == 0 || webhooks == 0 {
		t.Errorf("%d conversions, %d webhooks pointed", converted, webhooks)
	}
}

// TestVerifyStack: a built stack verifies as built, and not once a
// manager is cut short or replaced by a script (which would run as the
// user while result.json named the release), a manifest is edited, or a
// file is added; the error names the file and how to build it again.
func TestVerifyStack(t *testing.T) {
	t.Setenv(ReleasesEnv, t.TempDir())
	stack := labconfig.Stacks[len(labconfig.Stacks)-1]
	dir, err := StackDir(stack)
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := errors.Join(os.MkdirAll(filepath.Dir(p), 0o700), os.WriteFile(p, []byte(body), 0o700)); err != nil {
			t.Fatal(err)
		}
	}
	build := func() {
		t.Helper()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for _, m := range managerBinaries {
			write(m.name, "\x7fELF "+m.name)
		}
		write("manifests/core/crds.yaml", "kind: CustomResourceDefinition\n")
		write("VERSIONS", "sigs.k8s.io/cluster-api "+stack.ClusterAPI+"\nsigs.k8s.io/cluster-api-provider-vsphere "+stack.CAPV+"\n"+builtMark+"\n")
		if err := writeDigests(dir); err != nil {
			t.Fatal(err)
		}
	}
	build()
	if ok, err := Built(stack); !ok || err != nil {
		t.Fatalf("Built: %t, %v", ok, err)
	}
	if err := Verify(stack); err != nil {
		t.Fatalf("as built: %v", err)
	}
	for _, c := range []struct{ name, rel, body, want string }{
		{"cut short", "capi-manager", "\x7fEL", "capi-manager: changed since it was recorded"},
		{"a script", "kcp-manager", "#!/bin/sh\nid\n", "kcp-manager: changed since it was recorded"},
		{"manifest edited", "manifests/core/crds.yaml", "kind: Secret\n", "manifests/core/crds.yaml: changed"},
		{"file added", "manifests/core/extra.yaml", "", "manifests/core/extra.yaml: not among the files recorded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			build()
			if err := Verify(stack); err != nil {
				t.Fatal(err)
			}
			write(c.rel, c.body)
			err := Verify(stack)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "faultline lab releases --build "+stack.Name) {
				t.Errorf("Verify: %v, want it to name %q and the build", err, c.want)
			}
		})
	}
	build()
	if err := os.Remove(filepath.Join(dir, digestsFile)); err != nil {
		t.Fatal(err)
	}
	if ok, err := Built(stack); ok || err != nil {
		t.Errorf("built before digests were recorded: Built %t, %v; want not built", ok, err)
	}
}
