package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// CheckInventory compares a Cluster's Machines with the vCenter's VMs
// (seed 003 ended with a stale control-plane VM that CAPV could not
// delete): a Machine whose providerID names no VM, a Running Machine whose
// VM is powered off, and VMs named like the Cluster's Machines that no
// Machine of any Cluster owns. A VM is owned when a Machine's providerID
// names it, or a VSphereVM (CAPV names the VM after it, and after the
// VSphereMachine it belongs to) names it or has its UUID: a VM being
// cloned has its name before its Machine has a providerID, and another
// Cluster's VM (lab-1's, checking lab) is that Cluster's, not an orphan.
// The name is used only for a VM that nothing owns, and only when no
// other Cluster's Machines are named so too.
func CheckInventory(s ManagementState, vms []providers.VMInfo) []Finding {
	byUUID := vmsByUUID(vms)
	owned := ownedBy(append(slices.Clone(s.Machines), s.AllMachines...), s.VSphereVMs)
	var out []Finding
	for _, m := range s.Machines {
		name := str(m, "metadata", "name")
		id := str(m, "spec", "providerID")
		uuid, ok := strings.CutPrefix(id, "vsphere://")
		if !ok || uuid == "" {
			continue
		}
		vm, found := byUUID[strings.ToLower(uuid)]
		switch {
		case field(m, "metadata", "deletionTimestamp") != nil:
		case !found:
			out = append(out, Finding{ID: "vcenter-vm-missing", Severity: "error", Objects: []string{"Machine/" + name},
				Message: fmt.Sprintf("Machine %s: its providerID %s names no VM in the vCenter: CAPV does not recreate a VM that vanished", name, id),
				Fix:     "delete the Machine so that its owner replaces it (a MachineHealthCheck does so when it covers the Machine), before the upgrade counts on it"})
		case vm.PowerState == providers.PoweredOff && str(m, "status", "phase") == "Running":
			out = append(out, Finding{ID: "vcenter-vm-powered-off", Severity: "error", Objects: []string{"Machine/" + name, "VirtualMachine/" + vm.Name},
				Message: fmt.Sprintf("Machine %s is Running, but its VM %s is powered off", name, vm.Name),
				Fix:     "power the VM on or find who powered it off (vCenter events) before the upgrade; CAPV powers on a VM it finds off when it next reconciles it"})
		}
	}
	prefix := machinePrefix(s)
	var orphans []string
	var objs []string
	for _, vm := range vms {
		if !strings.HasPrefix(vm.Name, prefix) || owned[strings.ToLower(vm.UUID)] || owned[vm.Name] || namedForOther(s, prefix, vm.Name) {
			continue
		}
		orphans = append(orphans, fmt.Sprintf("%s (%s, %s)", vm.Name, vm.UUID, vm.PowerState))
		objs = append(objs, "VirtualMachine/"+vm.Name)
	}
	if len(orphans) > 0 {
		sort.Strings(orphans)
		sort.Strings(objs)
		out = append(out, Finding{ID: "vcenter-orphan-vm", Severity: "warning", Objects: objs,
			Message: fmt.Sprintf("%s: named like the Machines of %s, but no Machine owns %s: left behind by a Machine whose deletion did not finish (seed 003's stale control-plane VM)",
				strings.Join(orphans, ", "), s.Cluster, map[bool]string{true: "it", false: "them"}[len(orphans) == 1]),
			Fix: "check that nothing runs on it (a powered-on control plane may still run an etcd member: see etcd-member-mismatch), then delete it from the inventory"})
	}
	return out
}

// unowned tells whether a VM named like s's Machines is not theirs, by
// providerID or name: only then is it worth reading every Cluster's
// owners (readOwners).
func unowned(s ManagementState, vms []providers.VMInfo) bool {
	prefix := machinePrefix(s)
	own := ownedBy(s.Machines, nil)
	return slices.ContainsFunc(vms, func(vm providers.VMInfo) bool {
		return strings.HasPrefix(vm.Name, prefix) && !own[vm.Name] && !own[strings.ToLower(vm.UUID)]
	})
}

// machinePrefix is how the names of s's Machines, and so of their VMs,
// begin: the Cluster's name and a dash.
func machinePrefix(s ManagementState) string {
	return s.Cluster[strings.LastIndex(s.Cluster, "/")+1:] + "-"
}

// ownedBy is the VMs machines and vsphereVMs own, by name and by UUID
// (lowercased): a Machine's providerID and infrastructure (CAPV names the
// VM after its VSphereMachine), a VSphereVM's name and biosUUID.
func ownedBy(machines, vsphereVMs []map[string]any) map[string]bool {
	own := map[string]bool{}
	for _, m := range machines {
		own[str(m, "spec", "infrastructureRef", "name")] = true
		if uuid, ok := strings.CutPrefix(str(m, "spec", "providerID"), "vsphere://"); ok && uuid != "" {
			own[strings.ToLower(uuid)] = true
		}
	}
	for _, v := range vsphereVMs {
		own[str(v, "metadata", "name")] = true
		if uuid := str(v, "spec", "biosUUID"); uuid != "" {
			own[strings.ToLower(uuid)] = true
		}
	}
	return own
}

// namedForOther tells whether name fits another Cluster's Machines
// better than the checked one's prefix: prod-eu-md-0-x is prod-eu's
// when prod-eu has Machines, not prod's.
func namedForOther(s ManagementState, prefix, name string) bool {
	for _, m := range s.AllMachines {
		other := stringMap(field(m, "metadata", "labels"))["cluster.x-k8s.io/cluster-name"] + "-"
		if len(other) > len(prefix) && strings.HasPrefix(other, prefix) && strings.HasPrefix(name, other) {
			return true
		}
	}
	return false
}

// vmsByUUID indexes vms by their BIOS UUID, lower-cased as a providerID's
// may not be.
func vmsByUUID(vms []providers.VMInfo) map[string]providers.VMInfo {
	byUUID := make(map[string]providers.VMInfo, len(vms))
	for _, vm := range vms {
		byUUID[strings.ToLower(vm.UUID)] = vm
	}
	return byUUID
}
