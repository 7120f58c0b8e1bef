package management

import (
	"fmt"
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
