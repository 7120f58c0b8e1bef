package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/vsphere"
	"github.com/faultline-dev/faultline/session"
)

func load(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load("../scenarios/"+name+".yaml", nil, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestAdjust(t *testing.T) {
	sc := load(t, "power-off-worker")
	shared := sc.Spec.Lab
	if err := session.Adjust(sc, session.Adjustments{Timeout: time.Minute, Nodes: scenario.NodesContainers, Scope: "default/lab"}); err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Timeout.Duration != time.Minute || sc.Spec.Lab.Nodes != scenario.NodesContainers || shared.Nodes == scenario.NodesContainers {
		t.Errorf("timeout %s, nodes %q (the loaded spec.lab's %q): want 1m and containers on a copy", sc.Spec.Timeout, sc.Spec.Lab.Nodes, shared.Nodes)
	}
	for _, tg := range sc.Spec.Targets {
		if tg.Select.Cluster != "default/lab" {
			t.Errorf("target %s is in cluster %q, want default/lab", tg.Name, tg.Select.Cluster)
		}
	}
	for _, c := range []struct {
		a    session.Adjustments
		want string
	}{
		{session.Adjustments{Nodes: "vms"}, `nodes "vms": expected simulated or containers`},
		{session.Adjustments{Timeout: -time.Second}, "timeout -1s: expected a positive duration"},
		{session.Adjustments{Scope: "lab"}, `cluster "lab": expected namespace/name`},
		{session.Adjustments{Scope: "default/other"}, "outside the cluster of the run"},
	} {
		if err := session.Adjust(sc, c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Adjust(%+v) = %v, want %q", c.a, err, c.want)
		}
	}
}

func TestRecoverCommand(t *testing.T) {
	vc := vsphere.Record{URL: "https://vc.example.com/sdk"}
	for _, c := range []struct {
		ref  providers.ProviderRef
		want string
	}{
		{capi.Record{Context: "mgmt", VCenter: &vc}.Ref(), "faultline recover j.jsonl --allow-vcenter vc.example.com --allow-context mgmt"},
		{capi.Record{Context: "mgmt"}.Ref(), "faultline recover j.jsonl --allow-context mgmt"},
		{vc.Ref(), "faultline recover j.jsonl --allow-vcenter vc.example.com"},
		{kind.JournalRecord{Cluster: "dev"}.Ref(), "faultline recover j.jsonl"},
		{providers.ProviderRef{Name: "elsewhere"}, "faultline recover j.jsonl"},
	} {
		if got := session.RecoverCommand("j.jsonl", c.ref); got != c.want {
			t.Errorf("RecoverCommand(%+v) = %q, want %q", c.ref, got, c.want)
		}
	}
}

// The reconnector refuses, before dialling anything, a journal's vCenter
// or context the allow-lists do not name, and says a lab is gone.
func TestReconnectorRefuses(t *testing.T) {
	t.Setenv(session.EnvAllowedContexts, "")
	t.Setenv(session.EnvAllowedVCenters, "")
	r := &session.Reconnector{}
	entry := func(ref providers.ProviderRef) engine.JournalEntry { return engine.JournalEntry{Provider: ref} }
	vc := vsphere.Record{URL: "https://vc.example.com/sdk"}
	if err := r.Check(entry(vc.Ref())); err == nil || !strings.Contains(err.Error(), "vCenter vc.example.com is not allowed") {
		t.Errorf("vCenter not allowed: %v", err)
	}
	if err := r.Check(entry(capi.Record{Kubeconfig: "/k", Context: "prod"}.Ref())); err == nil || !strings.Contains(err.Error(), `context "prod" is not allowed`) {
		t.Errorf("context not allowed: %v", err)
	}
	r.VCenter.Allowed = []string{"vc.example.com"}
	if err := r.Check(entry(vc.Ref())); err != nil {
		t.Errorf("vCenter allowed: %v", err)
	}
	if _, err := r.Reconnect(context.Background(), entry(providers.ProviderRef{Name: lab.Name})); !errors.Is(err, engine.ErrProviderGone) {
		t.Errorf("lab: %v, want ErrProviderGone", err)
	}
	if _, err := r.Reconnect(context.Background(), entry(providers.ProviderRef{Name: "elsewhere"})); err == nil || !strings.Contains(err.Error(), "cannot reconnect") {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestOpenUnknownProvider(t *testing.T) {
	_, err := session.Open(context.Background(), session.Config{Provider: "moon"})
	var ce *session.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `provider "moon": expected one of lab, capi, vsphere, kind`) {
		t.Errorf("Open(moon) = %v, want a ConfigError naming the providers", err)
	}
}

// A pool opens a lab of its own for a scenario that asks for one, and a
// vCenter simulator alone for one without spec.lab or one the engine will
// skip (simulated only, on real nodes), each released on its own, warm
// lab or not.
func TestPoolOwnSessions(t *testing.T) {
	var opened [][]lab.ClusterSpec
	p := &session.Pool{Open: func(_ context.Context, _ []scenario.LabSpec, clusters ...lab.ClusterSpec) (*session.Session, error) {
		opened = append(opened, clusters)
		return &session.Session{}, nil
	}}
	own := load(t, "power-off-worker")
	own.Metadata.Labels = map[string]string{scenario.LabelOwnCluster: "true"}
	skipped := load(t, "mismatched-calico-pool")
	if err := session.Adjust(skipped, session.Adjustments{Nodes: scenario.NodesContainers}); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []*scenario.Scenario{load(t, "vm-power-cycle"), own, skipped} {
		s, release, err := p.Acquire(context.Background(), sc)
		if err != nil || s == nil || release == nil {
			t.Fatalf("Acquire(%s) = %v, %v", sc.Metadata.Name, s, err)
		}
	}
	if len(opened) != 3 || len(opened[0]) != 0 || len(opened[1]) != 1 || len(opened[2]) != 0 || p.Lab() != nil {
		t.Errorf("opened %v, warm lab %v: want a vCenter alone, one cluster, a vCenter alone, and no warm lab", opened, p.Lab())
	}
	// With a warm lab too: the skipped scenario must not land on a warm
	// lab of simulated nodes, where it would run.
	if err := p.Start(context.Background(), *load(t, "power-off-worker").Spec.Lab); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Acquire(context.Background(), skipped); err != nil || len(opened) != 5 || len(opened[4]) != 0 {
		t.Errorf("a skipped scenario beside a warm lab: %v, opened %v; want a vCenter alone", err, opened)
	}
}

// TestPoolRestartsForAnotherRelease: a lab runs one stack, so a scenario
// of another release gets a warm lab of its release in place of the warm
// one (which the scenarios after it of that release then share), and so
// does one of the default release after it.
func TestPoolRestartsForAnotherRelease(t *testing.T) {
	var opened [][]lab.ClusterSpec
	p := &session.Pool{Open: func(_ context.Context, _ []scenario.LabSpec, clusters ...lab.ClusterSpec) (*session.Session, error) {
		opened = append(opened, clusters)
		return &session.Session{}, nil
	}}
	other := lab.Stacks()[1]
	onOther := func() *scenario.Scenario {
		sc := load(t, "power-off-worker")
		if err := session.Adjust(sc, session.Adjustments{Release: lab.ParseRelease(other.Name)}); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	for _, sc := range []*scenario.Scenario{load(t, "power-off-worker"), onOther(), load(t, "power-off-worker")} {
		if _, _, err := p.Acquire(context.Background(), sc); err != nil {
			t.Fatalf("Acquire(%s): %v", sc.Metadata.Name, err)
		}
	}
	if len(opened) != 3 {
		t.Fatalf("opened %d labs, want 3 (the default stack's, %s's, the default's)", len(opened), other.Name)
	}
	for i, want := range []lab.Stack{lab.Stacks()[0], other, lab.Stacks()[0]} {
		if s, err := opened[i][0].Release.Resolve(); err != nil || s != want {
			t.Errorf("lab %d runs %v (%v), want %s", i, s, err, want)
		}
	}
}

// TestPlace: a scenario runs on a cluster leased beside others unless it
// says it must run alone, has no lab cluster, wants a lab of its own,
// upgrades the management plane or runs on real nodes; and Lease refuses
// it with the same reason, before anything is opened. Those no leased
// cluster serves run beside the leased ones on a lab of their own, with
// that reason, but those that must run alone or have real nodes; those
// the lab would skip, or labelled for another provider, are skipped; on
// another provider every scenario runs alone.
func TestPlace(t *testing.T) {
	alone := load(t, "power-off-worker")
	alone.Metadata.Labels[session.LabelAlone] = "true"
	own := load(t, "power-off-worker")
	own.Metadata.Labels[scenario.LabelOwnCluster] = "true"
	real := load(t, "power-off-worker")
	if err := session.Adjust(real, session.Adjustments{Nodes: scenario.NodesContainers}); err != nil {
		t.Fatal(err)
	}
	kind := load(t, "power-off-worker")
	kind.Metadata.Labels["provider"] = "kind"
	for _, tt := range []struct {
		sc    *scenario.Scenario
		where session.Where
		want  string
	}{
		{load(t, "power-off-worker"), session.Leased, ""},
		{alone, session.Alone, `it is labelled alone: "true"`},
		{load(t, "vm-power-cycle"), session.OwnLab, "it has no spec.lab"},
		{own, session.OwnLab, "it is labelled " + scenario.LabelOwnCluster},
		{real, session.Alone, "its nodes are real"},
		{load(t, "pdb-blocks-drain"), session.Skipped, "provider lab lacks capability Workloads"},
		{kind, session.Skipped, "it runs on provider kind"},
	} {
		got := session.Place(tt.sc, session.ProviderLab)
		if got.Where != tt.where || (tt.want == "") != (got.Why == "") || !strings.Contains(got.Why, tt.want) {
			t.Errorf("Place(%s) = %+v, want %s, %q", tt.sc.Metadata.Name, got, tt.where, tt.want)
		}
		if tt.want == "" {
			continue
		}
		p := &session.Pool{Open: func(context.Context, []scenario.LabSpec, ...lab.ClusterSpec) (*session.Session, error) {
			t.Fatalf("Lease(%s) opened a lab", tt.sc.Metadata.Name)
			return nil, nil
		}}
		if _, _, err := p.Lease(context.Background(), tt.sc); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Lease(%s) = %v, want the reason %q", tt.sc.Metadata.Name, err, tt.want)
		}
	}
	if got := session.Place(load(t, "power-off-worker"), session.ProviderVSphere); got.Where != session.Alone {
		t.Errorf("Place on vsphere = %+v, want alone", got)
	}
}

// TestLeaseStartFailsOnce: the scenarios beside one another wait for one
// start of the warm lab; when it fails, each gets its error, and the lab
// is not started again for each.
func TestLeaseStartFailsOnce(t *testing.T) {
	opens := 0
	p := &session.Pool{Open: func(context.Context, []scenario.LabSpec, ...lab.ClusterSpec) (*session.Session, error) {
		opens++
		return nil, errors.New("lab not ready: cluster lab: 4 of 5 Machines Running")
	}}
	for range 3 {
		if _, _, err := p.Lease(context.Background(), load(t, "power-off-worker")); err == nil || !strings.Contains(err.Error(), "4 of 5 Machines Running") {
			t.Errorf("Lease = %v, want the start's error", err)
		}
	}
	if opens != 1 {
		t.Errorf("the lab was started %d times, want once", opens)
	}
}

// LabSkips: a scenario that needs workloads is skipped on simulated nodes
// with the reason the lab's provider gives once open, and runs on real
// nodes; one that needs nothing simulated nodes lack runs.
func TestLabSkips(t *testing.T) {
	real := load(t, "pdb-blocks-drain")
	if err := session.Adjust(real, session.Adjustments{Nodes: scenario.NodesContainers}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		sc   *scenario.Scenario
		want string
	}{
		{load(t, "pdb-blocks-drain"), "provider lab lacks capability Workloads: the simulated tier runs no pods"},
		{load(t, "kill-etcd-quorum-apps"), "provider lab lacks capability Workloads"},
		{real, ""},
		{load(t, "power-off-worker"), ""},
		{load(t, "vm-power-cycle"), ""},
	} {
		if got := session.LabSkips(tt.sc); (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("LabSkips(%s) = %q, want %q", tt.sc.Metadata.Name, got, tt.want)
		}
	}
}

// TestPlaceUnbuilt: a scenario on a stack whose managers are not built
// runs alone, after the others, saying so (its build does not share the
// machine); one on the compiled stack is placed as ever.
func TestPlaceUnbuilt(t *testing.T) {
	t.Setenv("FAULTLINE_RELEASES", t.TempDir()) // the cache of built releases: none
	if got := session.Place(load(t, "upgrade-management-during-remediation"), session.ProviderLab); got.Where != session.Alone || !strings.Contains(got.Why, "is not built yet") {
		t.Errorf("Place(upgrade-management-during-remediation) with no stack built = %+v", got)
	}
	if got := session.Place(load(t, "vm-power-cycle"), session.ProviderLab); got.Where != session.OwnLab {
		t.Errorf("Place(vm-power-cycle) = %+v, want own-lab", got)
	}
}
