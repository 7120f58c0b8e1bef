package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// CheckInventory compares a Cluster's Machines with the vCenter's VMs
// (seed 003 ended with a stale control-plane VM that CAPV could not
// delete): a Machine whose providerID names no VM, a Running Machine whose
// VM is powered off, and VMs named like the Cluster's Machines that no
// Machine owns. CAPV names a VM after its VSphereMachine, the Machine's
// infrastructure; a VM being cloned has that name before its Machine has
// a providerID, so it is not an orphan.
func CheckInventory(s ManagementState, vms []providers.VMInfo) []Finding {
	byUUID := make(map[string]providers.VMInfo, len(vms))
	for _, vm := range vms {
		byUUID[strings.ToLower(vm.UUID)] = vm
	}
	owned, infraNames := map[string]bool{}, map[string]bool{}
	var out []Finding
	for _, m := range s.Machines {
		name := str(m, "metadata", "name")
		infraNames[str(m, "spec", "infrastructureRef", "name")] = true
		id := str(m, "spec", "providerID")
		uuid, ok := strings.CutPrefix(id, "vsphere://")
		if !ok || uuid == "" {
			continue
		}
		uuid = strings.ToLower(uuid)
		owned[uuid] = true
		vm, found := byUUID[uuid]
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
	prefix := s.Cluster[strings.LastIndex(s.Cluster, "/")+1:] + "-"
	var orphans []string
	var objs []string
	for _, vm := range vms {
		if !strings.HasPrefix(vm.Name, prefix) || owned[strings.ToLower(vm.UUID)] || infraNames[vm.Name] {
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
