package lab_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// The real-node tier: every VM CAPV clones in vcsim is a container of the
// kind node image that boots from its bootstrap data with real kubeadm,
// behind the lab's load balancer; the Machines run and their Nodes are
// real and Ready.
func TestIntegrationRealNodes(t *testing.T) {
	labtest.Require(t)
	if err := kind.Available(context.Background(), kind.ExecDocker{}); err != nil {
		if os.Getenv("FAULTLINE_REQUIRE_KIND") != "" {
			t.Fatal(err)
		}
		t.Skip("real nodes: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p, err := lab.ProfileNamed(lab.DefaultProfile)
	if err != nil {
		t.Fatal(err)
	}
	log := funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
	lab.RouteLibraryLogs(funcr.New(func(string, string) {}, funcr.Options{}))
	spec := lab.ClusterSpec{Name: "real", LabSpec: scenario.LabSpec{ControlPlanes: 1, Workers: 1, Nodes: scenario.NodesContainers}}
	started := time.Now()
	l, err := lab.Start(ctx, lab.Input{Profile: p, Clusters: []lab.ClusterSpec{spec}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	if err := l.WaitReady(ctx); err != nil {
		t.Fatalf("after %s: %v", time.Since(started).Round(time.Second), err)
	}
	t.Logf("real nodes: every Machine Running in %s", time.Since(started).Round(time.Second))
	c, err := l.Provider().Workload(ctx, lab.Namespace, "real")
	if err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d Nodes, want 2", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if n.Spec.ProviderID == "" || n.Status.NodeInfo.KubeletVersion == "" {
			t.Errorf("Node %s: providerID %q, kubelet %q", n.Name, n.Spec.ProviderID, n.Status.NodeInfo.KubeletVersion)
		}
	}
}
