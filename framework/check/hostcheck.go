package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// CheckControlPlaneHosts finds control-plane Machines of the Cluster
// whose VMs run on one ESXi host: losing that host (a crash, seed 003's
// "vSphere crash") takes them all at once. Two of three, or more than half
// of any count, is etcd's quorum on one host (an error: KCP cannot
// remediate a control plane without quorum, the cluster-api #10125 /
// #13352 class); fewer, but two or more, a warning. Machines being
// deleted, and VMs whose host vCenter does not say, are left out.
func CheckControlPlaneHosts(s ManagementState, vms []providers.VMInfo) []Finding {
	byUUID := vmsByUUID(vms)
	onHost := map[string][]string{}
	total := 0
	for _, m := range s.Machines {
		if _, cp := stringMap(field(m, "metadata", "labels"))["cluster.x-k8s.io/control-plane"]; !cp || field(m, "metadata", "deletionTimestamp") != nil {
			continue
		}
		total++
		uuid, ok := strings.CutPrefix(str(m, "spec", "providerID"), "vsphere://")
		if vm, found := byUUID[strings.ToLower(uuid)]; ok && found && vm.Host != "" {
			onHost[vm.Host] = append(onHost[vm.Host], str(m, "metadata", "name"))
		}
	}
	var out []Finding
	for _, host := range slices.Sorted(maps.Keys(onHost)) {
		names := onHost[host]
		if len(names) < 2 {
			continue
		}
		slices.Sort(names)
		objs := []string{"HostSystem/" + host}
		for _, n := range names {
			objs = append(objs, "Machine/"+n)
		}
		f := Finding{ID: "control-planes-share-host", Severity: "warning", Objects: objs,
			Message: fmt.Sprintf("%d of the %d control-plane Machines of %s run on host %s (%s): losing the host loses them at once",
				len(names), total, s.Cluster, host, strings.Join(names, ", ")),
			Fix: "spread the control planes over hosts: failure domains (VSphereFailureDomain and VSphereDeploymentZone) or a DRS VM-VM anti-affinity rule, then let KCP roll them out"}
		if len(names) > total/2 {
			f.Severity = "error"
			f.Message += fmt.Sprintf("; %d of %d is etcd's quorum, and KCP does not remediate a control plane that lost it", len(names), total)
		}
		out = append(out, f)
	}
	return out
}
