package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// workloadCluster plays a workload cluster for the runner: objects it is
// given are stored; a Service gets app's port as its nodePort, and a
// Deployment a ready EndpointSlice. Its one Node is 127.0.0.1.
type workloadCluster struct {
	*fake.Provider
	appPort int
	applied []string
	deleted []string
}

func (c *workloadCluster) NodeNetwork(context.Context, providers.Object) (netip.Prefix, error) {
	return netip.MustParsePrefix("127.0.0.0/8"), nil
}

func (c *workloadCluster) ApplyObject(_ context.Context, _ providers.Object, cluster string, obj map[string]any) error {
	ref := objectRef(cluster, obj)
	c.applied = append(c.applied, ref.Kind)
	switch ref.Kind {
	case "Service":
		obj["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["nodePort"] = int64(c.appPort)
	case "Deployment":
		c.SetObject(providers.ObjectRef{Cluster: cluster, APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice", Namespace: ref.Namespace, Name: ref.Name + "-x"}, map[string]any{
			"metadata":  map[string]any{"name": ref.Name + "-x", "labels": map[string]any{"kubernetes.io/service-name": ref.Name}},
			"endpoints": []any{map[string]any{"conditions": map[string]any{"ready": true}}, map[string]any{"conditions": map[string]any{"ready": true}}},
		})
	}
	c.SetObject(ref, obj)
	return nil
}

func (c *workloadCluster) DeleteObject(_ context.Context, _ providers.Object, ref providers.ObjectRef) error {
	c.deleted = append(c.deleted, ref.Kind)
	c.SetObject(ref, nil)
	return nil
}

func (c *workloadCluster) DryRunCreate(context.Context, providers.Object, string, map[string]any) error {
	return nil
}

// TestRunWorkload runs a scenario with a workload on a cluster whose one
// node is a server on 127.0.0.1 answering for both replicas: the workload
// is deployed (journaled) before the first step, undo all leaves it, it
// is removed at the end, and result.json has its measures and who
// answered. Not parallel: it points kube-proxy's health check port at
// its own server.
func TestRunWorkload(t *testing.T) {
	var n atomic.Int64
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("pod web-" + string(rune('a'+n.Add(1)%2)) + " on node n1\n"))
	}))
	defer app.Close()
	health := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer health.Close()
	saved := kubeProxyHealth
	kubeProxyHealth = portOf(t, health.URL)
	defer func() { kubeProxyHealth = saved }()

	c := &workloadCluster{Provider: fake.New("vm-a"), appPort: portOf(t, app.URL)}
	c.SetObject(providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Node", Name: "n1"}, map[string]any{
		"metadata": map[string]any{"name": "n1"}, "status": map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": "127.0.0.1"}}}})
	sc, err := scenario.Parse("t.yaml", []byte(`apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  requires: [VMPower, Workloads]
  pollInterval: 50ms
  timeout: 30s
  targets:
    - {name: victim, select: {vm: vm-a}}
  workloads:
    - {name: web, target: victim, interval: 50ms}
  steps:
    - name: off
      inject: {fault: vm.power-off, target: victim}
    - name: served
      observe:
        phases:
          - {name: web-up, when: {probe: workload-available, target: victim, args: {workload: web}}, within: 5s}
    - name: all
      undo: {all: true}
    - name: no-gap
      assert:
        disruption: {workload: web, atMost: 0s, longest: 0s}
`), nil, Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dry, err := OpenJournal(filepath.Join(dir, "dry.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer dry.Close()
	// A dry run lists the workload it would deploy, and deploys nothing.
	plan, err := Run(context.Background(), RunInput{Scenario: sc, Provider: c, Journal: dry, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Planned) != 2 || plan.Planned[0].Step != "workload/web" || len(c.applied) != 0 {
		t.Fatalf("dry run planned %+v and applied %v", plan.Planned, c.applied)
	}
	j, err := OpenJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, err := Run(context.Background(), RunInput{Scenario: sc, Provider: c, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Pass {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Reason)
	}
	if got := strings.Join(c.applied, ","); got != "Namespace,Deployment,Service" {
		t.Errorf("applied %s, want the namespace, the Deployment and the Service", got)
	}
	if got := strings.Join(c.deleted, ","); got != "Service,Deployment,Namespace" {
		t.Errorf("deleted %s at the end, want them in reverse", got)
	}
	if len(res.Faults) != 2 || res.Faults[0].Workload != "web" || res.Faults[0].Result != ResultUndone || res.Faults[1].Kind != "vm.power-off" {
		t.Fatalf("faults %+v", res.Faults)
	}
	if !res.Faults[0].UndoneAt.After(*res.Faults[1].UndoneAt) {
		t.Error("the workload was removed before undo all's fault was undone: undo all must leave it to the end")
	}
	entries, err := ReadJournal(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 || entries[0].FaultID != "workload/web" || len(Pending(entries)) != 0 {
		t.Errorf("journal: first entry %+v, %d pending", entries[0], len(Pending(entries)))
	}
	if len(res.Workloads) != 1 {
		t.Fatalf("workloads %+v", res.Workloads)
	}
	w := res.Workloads[0]
	req, eps := w.Measure(scenario.MeasureRequests), w.Measure(scenario.MeasureEndpoints)
	if req == nil || eps == nil || req.Samples == 0 || req.Failed != 0 || eps.Samples == 0 || len(w.ServedBy) == 0 {
		t.Errorf("workload result %+v", w)
	}
}
