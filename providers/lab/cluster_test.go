package lab

import (
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// TestServes: which catalogue-like spec.lab a shared 3+2 cluster with
// health checks on both sides can run.
func TestServes(t *testing.T) {
	yes, no := true, false
	shared := ClusterSpec{Name: "shared", LabSpec: labconfig.LabSpec{ControlPlanes: 3, Workers: 2, WorkerMHC: &yes, ControlPlaneMHC: &yes}}
	for _, tc := range []struct {
		name string
		lab  labconfig.LabSpec
		want bool
	}{
		{"power-off-worker: MHC on the control plane left out", labconfig.LabSpec{ControlPlanes: 3, Workers: 2}, true},
		{"delete-cp-vm: fewer workers", labconfig.LabSpec{ControlPlanes: 3, Workers: 1, ControlPlaneMHC: &yes}, true},
		{"stop-kubelet-cp: no MHC on the control plane", labconfig.LabSpec{ControlPlanes: 3, Workers: 1, ControlPlaneMHC: &no}, false},
		{"one control plane", labconfig.LabSpec{ControlPlanes: 1, Workers: 2}, false},
		{"more workers", labconfig.LabSpec{ControlPlanes: 3, Workers: 6}, false},
		{"antrea", labconfig.LabSpec{ControlPlanes: 3, Workers: 2, CNI: "antrea"}, false},
		{"calico by name", labconfig.LabSpec{ControlPlanes: 3, Workers: 2, CNI: "calico"}, true},
		{"no worker MHC", labconfig.LabSpec{ControlPlanes: 3, Workers: 2, WorkerMHC: &no}, false},
		{"pod network", labconfig.LabSpec{ControlPlanes: 3, Workers: 2, Network: labconfig.LabNetwork{PodCIDR: "10.202.146.0/24"}}, false},
		{"default pod network by name", labconfig.LabSpec{ControlPlanes: 3, Workers: 2, Network: labconfig.LabNetwork{PodCIDR: "192.168.0.0/16", CalicoBlockSize: 26}}, true},
		{"node startup", labconfig.LabSpec{ControlPlanes: 3, Workers: 1, NodeStartupTimeout: labconfig.D(30 * time.Second)}, false},
		{"remediation limited", labconfig.LabSpec{ControlPlanes: 3, Workers: 2, MaxUnhealthy: "1"}, false},
		{"pdb-blocks-drain: a drain timeout", labconfig.LabSpec{ControlPlanes: 3, Workers: 2, NodeDrainTimeout: labconfig.D(time.Minute)}, false},
	} {
		if got := shared.Serves(tc.lab); got != tc.want {
			t.Errorf("%s: Serves = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestMachineDeploymentDrainTimeout: spec.lab.nodeDrainTimeout becomes the
// workers' nodeDrainTimeoutSeconds; without it none is set.
func TestMachineDeploymentDrainTimeout(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want *int32
	}{{0, nil}, {time.Minute, ptr.To(int32(60))}} {
		md := machineDeployment(ClusterSpec{Name: "c", LabSpec: labconfig.LabSpec{Workers: 1, NodeDrainTimeout: labconfig.D(tc.d)}}, metav1.ObjectMeta{Name: "c-md-0"}, "c-worker")
		got := md.Spec.Template.Spec.Deletion.NodeDrainTimeoutSeconds
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("nodeDrainTimeout %s: nodeDrainTimeoutSeconds %v, want %v", tc.d, got, tc.want)
		}
	}
}

// The health checks remediate as spec.lab's remediation says, in Cluster
// API v1beta2's words or v1beta1's aliases; by default always (100%).
func TestHealthCheckTrigger(t *testing.T) {
	p, err := ProfileNamed(DefaultProfile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		lab         labconfig.LabSpec
		lessOrEqual string
		inRange     string
	}{
		{"default", labconfig.LabSpec{}, "100%", ""},
		{"v1beta2 count", labconfig.LabSpec{Remediation: labconfig.LabRemediation{TriggerIf: labconfig.LabTriggerIf{UnhealthyLessThanOrEqualTo: "1"}}}, "1", ""},
		{"maxUnhealthy percentage", labconfig.LabSpec{MaxUnhealthy: "40%"}, "40%", ""},
		{"unhealthyRange", labconfig.LabSpec{UnhealthyRange: "[1-2]"}, "", "[1-2]"},
	} {
		tc.lab.ControlPlanes, tc.lab.Workers = 1, 3
		var mhc *clusterv1.MachineHealthCheck
		for _, o := range clusterObjects(ClusterSpec{Name: "lab", LabSpec: tc.lab}, labconfig.DefaultStack(), &url.URL{Scheme: "https", Host: "127.0.0.1:1"}, "", infrav1.APIEndpoint{Host: "127.0.0.1", Port: 6443}, p, nil) {
			if m, ok := o.(*clusterv1.MachineHealthCheck); ok && m.Name == "lab-workers" {
				mhc = m
			}
		}
		if mhc == nil {
			t.Fatalf("%s: no worker MachineHealthCheck", tc.name)
		}
		got := mhc.Spec.Remediation.TriggerIf
		less := ""
		if got.UnhealthyLessThanOrEqualTo != nil {
			less = got.UnhealthyLessThanOrEqualTo.String()
		}
		if less != tc.lessOrEqual || got.UnhealthyInRange != tc.inRange {
			t.Errorf("%s: triggerIf %q / %q, want %q / %q", tc.name, less, got.UnhealthyInRange, tc.lessOrEqual, tc.inRange)
		}
	}
	errs := labconfig.LabSpec{ControlPlanes: 1, MaxUnhealthy: "1", Remediation: labconfig.LabRemediation{TriggerIf: labconfig.LabTriggerIf{UnhealthyLessThanOrEqualTo: "2", UnhealthyInRange: "[3-1]"}}}.Validate(field.NewPath("spec", "lab"))
	want := []string{"spec.lab.maxUnhealthy", "spec.lab.remediation.triggerIf.unhealthyInRange", "spec.lab.remediation.triggerIf"}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want on %v", errs, want)
	}
	for i, e := range errs {
		if e.Field != want[i] {
			t.Errorf("error %d on %s, want %s: %v", i, e.Field, want[i], e)
		}
	}
}
