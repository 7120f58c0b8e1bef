package check

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/providers"
)

// FindingIDs are the rules the checks report, each with what it looks at.
var FindingIDs = map[string]string{
	"webhook-blocks-node-bringup":  "a webhook with failurePolicy Fail sees pod creation in the system namespaces (seed 000)",
	"calico-pool-too-small":        "an enabled IPPool holds fewer blocks than there are nodes, or than a rolling upgrade's surge needs (seed 001)",
	"calico-blocksize-mismatch":    "an IPPool's blockSize differs from the nodes' pod CIDR prefix (seed 001)",
	"calico-nodes-without-block":   "nodes that hold no Calico block (seed 001)",
	"calico-pool-invalid":          "an IPPool whose CIDR or blockSize cannot be used",
	"calico-pool-overlap":          "an IPPool overlapping the service range or the nodes' addresses",
	"etcd-member-mismatch":         "etcd members (kubeadm's etcd static pods) and control-plane Machines that do not pair up (seed 003)",
	"mhc-coverage":                 "which Machines a MachineHealthCheck covers, its timeouts and limit",
	"control-plane-not-remediated": "control-plane Machines no MachineHealthCheck covers (seed 002)",
	"kcp-remediation-unbounded":    "KCP remediation without spec.remediation.maxRetry (seed 003)",
	"remediation-loop":             "a control-plane Machine recreated 3 times or more (seed 003)",
	"etcd-unhealthy":               "KCP reports EtcdClusterHealthy False (seeds 002, 003)",
	"etcd-quorum-margin":           "the control plane cannot lose another etcd member (seed 002)",
	"workload-api-unavailable":     "the workload cluster's API cannot be read",
	"vcenter-vm-missing":           "a Machine whose providerID names no VM in the vCenter (seed 003)",
	"vcenter-vm-powered-off":       "a Running Machine whose VM is powered off",
	"vcenter-orphan-vm":            "VMs named like the Cluster's Machines that no Machine owns (seed 003)",
	"control-planes-share-host":    "control-plane Machines whose VMs run on one ESXi host: its loss takes them at once (etcd's quorum when more than half)",
}

// RunChecks reads the management cluster's objects of scope's Cluster
// and its workload cluster, and runs every check; reads only. A workload
// cluster that cannot be read is itself a finding (its etcd may have lost
// quorum, as in seed 002): the management cluster's checks still run.
// With no management cluster (kind), only the workload cluster's run.
func RunChecks(ctx context.Context, o providers.Objects, scope providers.Object) ([]Finding, error) {
	mgmt, err := ReadManagementState(ctx, o, scope)
	if errors.Is(err, providers.ErrUnsupported) {
		// No management cluster (kind): the workload checks alone.
		return RunWorkloadChecks(ctx, o, scope)
	}
	if err != nil {
		return nil, err
	}
	out := append(CheckEtcd(mgmt), CheckRemediation(mgmt)...)
	out = append(out, CheckControlPlaneFailureDomains(mgmt)...)
	if inv, ok := o.(providers.Inventory); ok {
		vms, err := inv.ListVMs(ctx)
		switch {
		case err == nil:
			if unowned(mgmt, vms) {
				if err := readOwners(ctx, o, scope, &mgmt); err != nil {
					return nil, err
				}
			}
			out = append(out, CheckInventory(mgmt, vms)...)
			out = append(out, CheckControlPlaneHosts(mgmt, vms)...)
		case !errors.Is(err, providers.ErrUnsupported):
			return nil, err
		}
	}
	w, err := readWorkload(ctx, o, scope)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return append(out, Finding{ID: "workload-api-unavailable", Severity: "error", Objects: []string{"Cluster/" + mgmt.Cluster},
			Message: fmt.Sprintf("the workload API of %s cannot be read: %s", mgmt.Cluster, providers.APIErrorText(err)),
			Fix:     "restore the control plane (etcd quorum, API servers) before anything else; its checks did not run"}), nil
	}
	w.net.Surge, w.net.SurgeFrom = upgradeSurge(mgmt)
	if cidrs, ok := field(mgmt.ClusterObject, "spec", "clusterNetwork", "services", "cidrBlocks").([]any); ok {
		w.net.ServiceCIDRs = nil
		for _, c := range cidrs {
			w.net.ServiceCIDRs = append(w.net.ServiceCIDRs, fmt.Sprint(c))
		}
	}
	out = append(out, CheckEtcdMembers(mgmt, w.kubeSystem)...)
	return append(out, w.check()...), nil
}

// RunWorkloadChecks runs the checks that need only the workload cluster
// (a kind cluster, or one no Cluster API manages): admission webhooks and
// Calico pools, with the service range from kubeadm's ClusterConfiguration.
func RunWorkloadChecks(ctx context.Context, o providers.Objects, scope providers.Object) ([]Finding, error) {
	w, err := readWorkload(ctx, o, scope)
	if err != nil {
		return nil, err
	}
	return w.check(), nil
}

// workloadState is what the checks read of a workload cluster.
type workloadState struct {
	adm        AdmissionState
	net        CalicoNetwork
	kubeSystem []map[string]any // kube-system's pods
}

func readWorkload(ctx context.Context, o providers.Objects, scope providers.Object) (workloadState, error) {
	var w workloadState
	var err error
	if w.adm, err = ReadAdmissionState(ctx, o, scope); err != nil {
		return w, err
	}
	if w.net, err = ReadCalicoNetwork(ctx, o, scope); err != nil {
		return w, err
	}
	if w.kubeSystem, err = o.ListObjects(ctx, scope, providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Pod", Namespace: "kube-system"}); err != nil {
		return w, err
	}
	cm, err := o.GetObject(ctx, scope, providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "kubeadm-config"})
	if err != nil {
		return w, err
	}
	w.net.ServiceCIDRs = kubeadmServiceSubnets(str(cm, "data", "ClusterConfiguration"))
	return w, nil
}

func (w workloadState) check() []Finding {
	return append(CheckWebhooks(w.adm), CheckCalicoPools(w.net)...)
}

// kubeadmServiceSubnets reads networking.serviceSubnet (comma separated
// for dual stack) from kubeadm's ClusterConfiguration; none when absent or
// unreadable.
func kubeadmServiceSubnets(config string) []string {
	var c struct {
		Networking struct {
			ServiceSubnet string `json:"serviceSubnet"`
		} `json:"networking"`
	}
	if err := yaml.Unmarshal([]byte(config), &c); err != nil || c.Networking.ServiceSubnet == "" {
		return nil
	}
	return strings.Split(c.Networking.ServiceSubnet, ",")
}
