package lab_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// TestIntegrationKubeletVersion: a simulated Node reports its Machine's
// Kubernetes version as its kubelet's, as a VM cloned from that
// version's image does. Cluster API v1.14's KCP counts its Machines'
// versions by their Nodes' (status.versions), so Nodes that all said the
// lab's default version hid a control plane's upgrade from it, and the
// MachineSets' ControlPlaneIsStable preflight check passed mid-rollout
// on the v1.14 stack alone (kubernetes-rollout-lose-worker).
func TestIntegrationKubeletVersion(t *testing.T) {
	const version = "v1.34.3"
	if version == labconfig.KubernetesVersion {
		t.Fatalf("the test needs a version other than the lab's default, %s", version)
	}
	l := startLab(t, lab.ClusterSpec{Name: "lab", LabSpec: labconfig.LabSpec{ControlPlanes: 1, Workers: 1, KubernetesVersion: version}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var machines clusterv1.MachineList
	if err := l.Client().List(ctx, &machines); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range machines.Items {
		if m.Status.NodeRef.IsDefined() {
			want[m.Status.NodeRef.Name] = m.Spec.Version
		}
	}
	wc, err := l.Provider().Workload(ctx, lab.Namespace, "lab")
	if err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := wc.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 || len(want) != 2 {
		t.Fatalf("%d Nodes and %d Machines with one, want 2", len(nodes.Items), len(want))
	}
	for _, n := range nodes.Items {
		if got := n.Status.NodeInfo.KubeletVersion; got != want[n.Name] || got != version {
			t.Errorf("Node %s: kubelet %s, its Machine %q", n.Name, got, want[n.Name])
		}
	}
}
