package realnodes

import (
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"k8s.io/utils/ptr"
	"time"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"

	"github.com/faultline-dev/faultline/providers/kind"
)

// kubeadmPatches is where the lab's kubeadm patches go on a real node.
const kubeadmPatches = "/etc/kubeadm/patches"

// kubeadmConfig is the KubeadmConfigSpec of a real node in a
// container: what kind gives its nodes (no preflight, the kubelet's disk
// and swap checks off, cgroup v1 where the host has it), and the time
// profile's knobs, so that compressed and real mean what they mean in the
// simulated tier: kube-controller-manager's node-monitor-grace-period, and
// the kubelet's status updates and lease, renewed well within that grace
// (a 2s grace with the default 10s lease renewal would make every Node
// flap).
func kubeadmConfig(p labconfig.Profile, q kind.HostQuirks) bootstrapv1.KubeadmConfigSpec {
	kubelet := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupRoot: /kubelet
failSwapOn: false
imageGCHighThresholdPercent: 100
evictionHard: {nodefs.available: "0%%", nodefs.inodesFree: "0%%", imagefs.available: "0%%"}
nodeStatusUpdateFrequency: %s
nodeStatusReportFrequency: %s
nodeLeaseDurationSeconds: %d
`, p.Heartbeat, p.Heartbeat, leaseSeconds(p))
	if q.CgroupV1 {
		kubelet += "failCgroupV1: false\n"
	}
	reg := bootstrapv1.NodeRegistrationOptions{
		CRISocket:             "unix:///run/containerd/containerd.sock",
		IgnorePreflightErrors: []string{"all"},
	}
	patches := bootstrapv1.Patches{Directory: kubeadmPatches}
	return bootstrapv1.KubeadmConfigSpec{
		ClusterConfiguration: bootstrapv1.ClusterConfiguration{
			ControllerManager: bootstrapv1.ControllerManager{ExtraArgs: []bootstrapv1.Arg{
				{Name: "node-monitor-grace-period", Value: ptr.To(p.NodeGrace.String())},
				{Name: "node-monitor-period", Value: ptr.To(min(p.Heartbeat, p.NodeGrace/4).String())},
			}},
		},
		InitConfiguration: bootstrapv1.InitConfiguration{NodeRegistration: reg, SkipPhases: []string{"preflight"}, Patches: patches},
		JoinConfiguration: bootstrapv1.JoinConfiguration{NodeRegistration: reg, SkipPhases: []string{"preflight"}, Patches: patches},
		Files: []bootstrapv1.File{{
			Path: kubeadmPatches + "/kubeletconfiguration0+strategic.yaml", Owner: "root:root", Permissions: "0644", Content: kubelet,
		}},
	}
}

// leaseSeconds is the kubelet's lease duration: four heartbeats, at least
// a second.
func leaseSeconds(p labconfig.Profile) int {
	return max(1, int((4*p.Heartbeat).Round(time.Second)/time.Second))
}
