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
		if !liveControlPlane(m) {
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
		f := Finding{ID: "control-planes-share-host", Severity: "warning", Objects: gathered("HostSystem/"+host, names),
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

// CheckControlPlaneFailureDomains finds control-plane Machines of the
// Cluster gathered in one failure domain while the Cluster offers others
// for control planes (status.failureDomains with controlPlane true): KCP
// spreads its Machines over them when it creates them, but a remediation
// or a rollout can leave them uneven. More than half in one domain is
// etcd's quorum there (an error); two or more where another domain holds
// none, a warning. A Cluster with one such domain, or none, has nothing to
// spread over (control-planes-share-host still finds shared hosts).
func CheckControlPlaneFailureDomains(s ManagementState) []Finding {
	var domains []string
	list, _ := field(s.ClusterObject, "status", "failureDomains").([]any)
	for _, d := range list {
		if fd, ok := d.(map[string]any); ok && fd["controlPlane"] == true {
			domains = append(domains, fmt.Sprint(fd["name"]))
		}
	}
	if len(domains) < 2 {
		return nil
	}
	in := map[string][]string{}
	total := 0
	for _, m := range s.Machines {
		if !liveControlPlane(m) {
			continue
		}
		total++
		if fd := str(m, "spec", "failureDomain"); fd != "" {
			in[fd] = append(in[fd], str(m, "metadata", "name"))
		}
	}
	empty := slices.ContainsFunc(domains, func(d string) bool { return len(in[d]) == 0 })
	var out []Finding
	for _, fd := range slices.Sorted(maps.Keys(in)) {
		names := in[fd]
		if len(names) < 2 || !empty && len(names) <= total/2 {
			continue
		}
		f := Finding{ID: "control-planes-share-failure-domain", Severity: "warning", Objects: gathered("FailureDomain/"+fd, names),
			Message: fmt.Sprintf("%d of the %d control-plane Machines of %s are in failure domain %s (%s) while the Cluster offers %d for control planes (%s)",
				len(names), total, s.Cluster, fd, strings.Join(names, ", "), len(domains), strings.Join(domains, ", ")),
			Fix: "roll the control plane out (KCP places new Machines in the failure domain with the fewest), or delete one of them for KCP to replace in another domain"}
		if len(names) > total/2 {
			f.Severity = "error"
			f.Message += fmt.Sprintf("; %d of %d is etcd's quorum: losing the domain loses it", len(names), total)
		}
		out = append(out, f)
	}
	return out
}

// gathered is a finding's objects: where the Machines are, then the
// Machines by name (names is sorted in place).
func gathered(where string, names []string) []string {
	slices.Sort(names)
	return append([]string{where}, prefixed("Machine/", names)...)
}

// liveControlPlane tells whether Machine m is a control plane's and not
// being deleted.
func liveControlPlane(m map[string]any) bool {
	_, cp := stringMap(field(m, "metadata", "labels"))["cluster.x-k8s.io/control-plane"]
	return cp && field(m, "metadata", "deletionTimestamp") == nil
}
