package lab

import (
	"context"
	"fmt"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
)

// The lab's names, in labconfig.
const (
	KubernetesVersion = labconfig.KubernetesVersion
	Namespace         = labconfig.Namespace
	ClusterName       = labconfig.ClusterName
)

// The vcsim inventory the lab's VMs are cloned into (simulator.VPX()).
const (
	vmTemplate   = "DC0_C0_RP0_VM0"
	datacenter   = "DC0"
	datastore    = "LocalDS_0"
	resourcePool = "/DC0/host/DC0_C0/Resources"
	vmFolder     = "/DC0/vm"
	vmNetwork    = "VM Network"
)

// ClusterSpec is one workload cluster of the lab (labconfig.ClusterSpec).
type ClusterSpec = labconfig.ClusterSpec

// SpecFor is the lab cluster named name that a scenario's spec.lab asks
// for.
func SpecFor(name string, s labconfig.LabSpec) ClusterSpec { return labconfig.SpecFor(name, s) }

// serviceCIDR is the lab clusters' Service range.
const serviceCIDR = "10.96.0.0/12"

// clusterObjects returns the Cluster API objects of one workload cluster,
// in creation order.
// realNodes, when set, is the kubeadm configuration of a cluster whose
// VMs are real nodes; endpoint is its control-plane endpoint; stack is
// the stack the management plane runs, whose API the objects must fit.
func clusterObjects(s ClusterSpec, stack Stack, vc *url.URL, thumbprint string, endpoint infrav1.APIEndpoint, p Profile, realNodes *bootstrapv1.KubeadmConfigSpec) []client.Object {
	podCIDR, _, _ := s.PodNetwork()
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: s.NamespaceOrDefault(), Labels: map[string]string{clusterv1.ClusterNameLabel: s.Name}}
	}
	cpTemplate := machineTemplate(meta(s.Name+"-control-plane"), vc, thumbprint)
	workerTemplate := machineTemplate(meta(s.Name+"-worker"), vc, thumbprint)

	var kcp controlplanev1.KubeadmControlPlaneSpec
	workerConfig := &bootstrapv1.KubeadmConfigTemplate{ObjectMeta: meta(s.Name + "-worker")}
	if realNodes != nil {
		kcp.KubeadmConfigSpec = *realNodes
		workerConfig.Spec.Template.Spec = *realNodes
	} else {
		kcp.KubeadmConfigSpec.InitConfiguration.NodeRegistration = capvNodeRegistration()
		kcp.KubeadmConfigSpec.JoinConfiguration.NodeRegistration = capvNodeRegistration()
		workerConfig.Spec.Template.Spec.JoinConfiguration.NodeRegistration = capvNodeRegistration()
	}
	// Every key of the cluster is ECDSA P-256, whose handshakes cost a
	// fraction of RSA's: KCP makes the CAs so, and kubeadm on a real node
	// its certificates; the simulator's servers' keys are ECDSA already.
	// Cluster API v1.11 has no encryptionAlgorithm: its API server would
	// prune it and refuse the clusterConfiguration left empty.
	if stack.HasEncryptionAlgorithm() {
		kcp.KubeadmConfigSpec.ClusterConfiguration.EncryptionAlgorithm = bootstrapv1.EncryptionAlgorithmECDSAP256
	}
	objs := []client.Object{
		&infrav1.VSphereCluster{
			ObjectMeta: meta(s.Name),
			Spec: infrav1.VSphereClusterSpec{
				Server: vc.Host, Thumbprint: thumbprint,
				ControlPlaneEndpoint: endpoint,
				DisableClusterModule: ptr.To(true),
			},
		},
		cpTemplate, workerTemplate,
		&controlplanev1.KubeadmControlPlane{
			ObjectMeta: meta(s.ControlPlaneName()),
			Spec: controlplanev1.KubeadmControlPlaneSpec{
				Replicas: ptr.To(int32(s.ControlPlanes)),
				Version:  s.Version(),
				// A bounded retry, as a cluster configured after seed 003
				// has: a replacement that cannot join is not recreated
				// forever.
				Remediation:       controlplanev1.KubeadmControlPlaneRemediationSpec{MaxRetry: ptr.To(int32(5))},
				KubeadmConfigSpec: kcp.KubeadmConfigSpec,
				MachineTemplate: controlplanev1.KubeadmControlPlaneMachineTemplate{
					Spec: controlplanev1.KubeadmControlPlaneMachineTemplateSpec{
						InfrastructureRef: clusterv1.ContractVersionedObjectReference{
							APIGroup: infrav1.GroupVersion.Group, Kind: "VSphereMachineTemplate", Name: cpTemplate.Name,
						},
					},
				},
			},
		},
		workerConfig,
		&clusterv1.Cluster{
			ObjectMeta: meta(s.Name),
			Spec: clusterv1.ClusterSpec{
				ClusterNetwork: clusterv1.ClusterNetwork{
					Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{podCIDR.String()}},
					// kubeadm's and kind's default range: the catalogue's
					// Services with a fixed clusterIP (10.96.200.x) are
					// in it, as a real API server requires.
					Services: clusterv1.NetworkRanges{CIDRBlocks: []string{serviceCIDR}},
				},
				ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: controlplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane", Name: s.ControlPlaneName(),
				},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "VSphereCluster", Name: s.Name,
				},
			},
		},
	}
	if s.Workers > 0 {
		objs = append(objs, machineDeployment(s, meta(s.MachineDeploymentName()), workerTemplate.Name))
	}
	return append(objs, healthChecks(s, meta, p)...)
}

// capvNodeRegistration is what CAPV's cluster template registers every
// node with on the simulated tier (its kubelet waits for the vSphere cloud
// provider): KCP reads a join configuration by its kubeletExtraArgs since
// cluster-api #14167. The real-node tier runs no cloud provider, so its
// kubelets must not wait for one.
func capvNodeRegistration() bootstrapv1.NodeRegistrationOptions {
	return bootstrapv1.NodeRegistrationOptions{
		Name: "{{ local_hostname }}", CRISocket: "/var/run/containerd/containerd.sock",
		KubeletExtraArgs: []bootstrapv1.Arg{{Name: "cloud-provider", Value: ptr.To("external")}},
	}
}

// machineTemplate is a VSphereMachineTemplate cloning vcsim's template
// VM in the vCenter at vc.
//
// Its VMs carry their placement group (vcsim.PlacementKey: the template's
// namespace/name) as a custom VMX key, which CAPV sets at the clone: the
// lab's vCenter places them by it (spec.lab.placement).
func machineTemplate(meta metav1.ObjectMeta, vc *url.URL, thumbprint string) *infrav1.VSphereMachineTemplate {
	return &infrav1.VSphereMachineTemplate{
		ObjectMeta: meta,
		Spec: infrav1.VSphereMachineTemplateSpec{Template: infrav1.VSphereMachineTemplateResource{
			Spec: infrav1.VSphereMachineSpec{VirtualMachineCloneSpec: infrav1.VirtualMachineCloneSpec{
				Template: vmTemplate, CloneMode: infrav1.FullClone,
				Server: vc.Host, Thumbprint: thumbprint,
				Datacenter: datacenter, Datastore: datastore, ResourcePool: resourcePool, Folder: vmFolder,
				Network: infrav1.NetworkSpec{Devices: []infrav1.NetworkDeviceSpec{{NetworkName: vmNetwork, DHCP4: ptr.To(true)}}},
				NumCPUs: 2, MemoryMiB: 4096, DiskGiB: 20,
				CustomVMXKeys: map[string]string{vcsim.PlacementKey: meta.Namespace + "/" + meta.Name},
			}},
		}},
	}
}

// machineDeployment is the workers' MachineDeployment of cluster s, from
// their machine template.
func machineDeployment(s ClusterSpec, meta metav1.ObjectMeta, template string) *clusterv1.MachineDeployment {
	mdLabels := map[string]string{clusterv1.ClusterNameLabel: s.Name, clusterv1.MachineDeploymentNameLabel: s.MachineDeploymentName()}
	return &clusterv1.MachineDeployment{
		ObjectMeta: meta,
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: s.Name,
			Replicas:    ptr.To(int32(s.Workers)),
			Selector:    metav1.LabelSelector{MatchLabels: mdLabels},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: mdLabels},
				Spec: clusterv1.MachineSpec{
					ClusterName: s.Name,
					Version:     s.Version(),
					Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KubeadmConfigTemplate", Name: s.Name + "-worker",
					}},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group, Kind: "VSphereMachineTemplate", Name: template,
					},
					Deletion: drainTimeout(s.NodeDrainTimeout.Duration),
				},
			},
		},
	}
}

// drainTimeout is the Machines' deletion settings for a drain timeout d
// (none when zero).
func drainTimeout(d time.Duration) clusterv1.MachineDeletionSpec {
	if d <= 0 {
		return clusterv1.MachineDeletionSpec{}
	}
	return clusterv1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To(int32(d / time.Second))}
}

// healthChecks are cluster s's MachineHealthChecks, with the profile's
// timeouts as s adjusts them.
func healthChecks(s ClusterSpec, meta func(string) metav1.ObjectMeta, p Profile) []client.Object {
	var objs []client.Object
	if s.NodeStartupTimeout.Duration > 0 {
		p.MHCNodeStartup = s.NodeStartupTimeout.Duration
	}
	if d := s.UnhealthyTimeout.Duration; d > 0 {
		p.MHCUnhealthy, p.MHCNotReady = d, d
	}
	if s.RealNodes() {
		p.MHCNotReady = max(p.MHCNotReady, labconfig.RealNodeNotReady)
	}
	if s.HasWorkerMHC() && s.Workers > 0 {
		objs = append(objs, healthCheck(meta(s.Name+"-workers"), s.Name, map[string]string{clusterv1.MachineDeploymentNameLabel: s.MachineDeploymentName()}, p, s.TriggerIf()))
	}
	if s.HasControlPlaneMHC() {
		objs = append(objs, healthCheck(meta(s.Name+"-control-plane"), s.Name, map[string]string{clusterv1.MachineControlPlaneLabel: ""}, p, s.TriggerIf()))
	}
	return objs
}

// healthCheck is a MachineHealthCheck on Node Ready Unknown or False, with
// the profile's timeouts, remediating as trigger says (Cluster API's
// default, always, when it says nothing).
func healthCheck(meta metav1.ObjectMeta, cluster string, selector map[string]string, p Profile, trigger labconfig.LabTriggerIf) *clusterv1.MachineHealthCheck {
	secs := func(d time.Duration) *int32 { return ptr.To(int32(d / time.Second)) }
	triggerIf := clusterv1.MachineHealthCheckRemediationTriggerIf{UnhealthyLessThanOrEqualTo: ptr.To(intstr.FromString("100%"))}
	switch {
	case trigger.UnhealthyInRange != "":
		triggerIf = clusterv1.MachineHealthCheckRemediationTriggerIf{UnhealthyInRange: trigger.UnhealthyInRange}
	case trigger.UnhealthyLessThanOrEqualTo != "":
		triggerIf.UnhealthyLessThanOrEqualTo = ptr.To(intstr.Parse(trigger.UnhealthyLessThanOrEqualTo))
	}
	return &clusterv1.MachineHealthCheck{
		ObjectMeta: meta,
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: cluster,
			Selector:    metav1.LabelSelector{MatchLabels: selector},
			Checks: clusterv1.MachineHealthCheckChecks{
				NodeStartupTimeoutSeconds: secs(p.MHCNodeStartup),
				UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
					{Type: "Ready", Status: "Unknown", TimeoutSeconds: secs(p.MHCUnhealthy)},
					{Type: "Ready", Status: "False", TimeoutSeconds: secs(p.MHCNotReady)},
				},
			},
			Remediation: clusterv1.MachineHealthCheckRemediation{TriggerIf: triggerIf},
		},
	}
}

// createCluster creates the cluster's objects, retrying while the webhooks
// that default and validate them come up.
func createCluster(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, o := range objs {
		var last error
		deadline := time.Now().Add(30 * time.Second)
		for {
			last = c.Create(ctx, o)
			if last == nil || time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
		if last != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), last)
		}
	}
	return nil
}
