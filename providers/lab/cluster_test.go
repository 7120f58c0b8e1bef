package lab

import (
	"testing"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
)

// TestServes: which catalogue-like spec.lab a shared 3+2 cluster with
// health checks on both sides can run.
func TestServes(t *testing.T) {
	yes, no := true, false
	shared := ClusterSpec{Name: "shared", LabSpec: scenario.LabSpec{ControlPlanes: 3, Workers: 2, WorkerMHC: &yes, ControlPlaneMHC: &yes}}
	for _, tc := range []struct {
		name string
		lab  scenario.LabSpec
		want bool
	}{
		{"power-off-worker: MHC on the control plane left out", scenario.LabSpec{ControlPlanes: 3, Workers: 2}, true},
		{"delete-cp-vm: fewer workers", scenario.LabSpec{ControlPlanes: 3, Workers: 1, ControlPlaneMHC: &yes}, true},
		{"stop-kubelet-cp: no MHC on the control plane", scenario.LabSpec{ControlPlanes: 3, Workers: 1, ControlPlaneMHC: &no}, false},
		{"one control plane", scenario.LabSpec{ControlPlanes: 1, Workers: 2}, false},
		{"more workers", scenario.LabSpec{ControlPlanes: 3, Workers: 6}, false},
		{"antrea", scenario.LabSpec{ControlPlanes: 3, Workers: 2, CNI: "antrea"}, false},
		{"calico by name", scenario.LabSpec{ControlPlanes: 3, Workers: 2, CNI: "calico"}, true},
		{"no worker MHC", scenario.LabSpec{ControlPlanes: 3, Workers: 2, WorkerMHC: &no}, false},
		{"pod network", scenario.LabSpec{ControlPlanes: 3, Workers: 2, Network: scenario.LabNetwork{PodCIDR: "10.202.146.0/24"}}, false},
		{"default pod network by name", scenario.LabSpec{ControlPlanes: 3, Workers: 2, Network: scenario.LabNetwork{PodCIDR: "192.168.0.0/16", CalicoBlockSize: 26}}, true},
		{"node startup", scenario.LabSpec{ControlPlanes: 3, Workers: 1, NodeStartupTimeout: scenario.D(30 * time.Second)}, false},
	} {
		if got := shared.Serves(tc.lab); got != tc.want {
			t.Errorf("%s: Serves = %t, want %t", tc.name, got, tc.want)
		}
	}
}
