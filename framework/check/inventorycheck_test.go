package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/providers"
)

// TestCheckInventory: seed 003's inventory after the crash (a stale
// control-plane VM no Machine owns), a Machine whose VM vanished and a
// Running Machine whose VM is off; then a consistent one, with a VM still
// being cloned and VMs of other clusters.
func TestCheckInventory(t *testing.T) {
	machine := func(name, uuid, phase string) map[string]any { return vsphereMachine("", name, uuid, phase) }
	s := ManagementState{Cluster: "tkg-system/it-tkg-mgmt", Machines: []map[string]any{
		machine("it-tkg-mgmt-rg44c-qfhp2", "4233989E-1F0F-2807-2F91-2227E531E91B", "Running"),
		machine("it-tkg-mgmt-rg44c-sbv4f", "42338dee-6beb-f435-b345-0492f5bab982", "Running"),
		machine("it-tkg-mgmt-rg44c-vrkvg", "4233564d-5599-92ba-fd2a-e8437b1c90ee", "Provisioned"),
		machine("it-tkg-mgmt-rg44c-new", "", "Provisioning"),
	}}
	vms := []providers.VMInfo{
		{Name: "it-tkg-mgmt-rg44c-qfhp2", UUID: "4233989e-1f0f-2807-2f91-2227e531e91b", PowerState: providers.PoweredOn},
		{Name: "it-tkg-mgmt-rg44c-sbv4f", UUID: "42338dee-6beb-f435-b345-0492f5bab982", PowerState: providers.PoweredOff},
		{Name: "it-tkg-mgmt-rg44c-gn5sw", UUID: "42330000-0000-0000-0000-000000000001", PowerState: providers.PoweredOn},
		{Name: "it-tkg-mgmt-rg44c-new", UUID: "42330000-0000-0000-0000-000000000002", PowerState: providers.PoweredOff},
		{Name: "other-cluster-md-0-x", UUID: "42330000-0000-0000-0000-000000000003", PowerState: providers.PoweredOn},
	}
	got := CheckInventory(s, vms)
	if ids := findingIDs(got); ids != "vcenter-vm-powered-off,vcenter-vm-missing,vcenter-orphan-vm" {
		t.Fatalf("findings %s: %+v", ids, got)
	}
	for i, want := range []string{
		"Machine it-tkg-mgmt-rg44c-sbv4f is Running, but its VM it-tkg-mgmt-rg44c-sbv4f is powered off",
		"Machine it-tkg-mgmt-rg44c-vrkvg: its providerID vsphere://4233564d-5599-92ba-fd2a-e8437b1c90ee names no VM in the vCenter",
		"it-tkg-mgmt-rg44c-gn5sw (42330000-0000-0000-0000-000000000001, poweredOn): named like the Machines of tkg-system/it-tkg-mgmt, but no Machine owns it",
	} {
		if !strings.Contains(got[i].Message, want) {
			t.Errorf("%s: %q, want it to contain %q", got[i].ID, got[i].Message, want)
		}
	}
	consistent := []providers.VMInfo{vms[0], {Name: vms[1].Name, UUID: vms[1].UUID, PowerState: providers.PoweredOn}, {Name: "it-tkg-mgmt-rg44c-vrkvg", UUID: "4233564d-5599-92ba-fd2a-e8437b1c90ee", PowerState: providers.PoweredOn}, vms[3], vms[4]}
	if got := CheckInventory(s, consistent); len(got) != 0 {
		t.Errorf("consistent inventory: %+v", got)
	}
}

// TestCheckInventoryTwoClusters: Clusters lab and lab-1 in one namespace.
// Checking lab, lab-1's VMs are named lab-... too, but lab-1's Machines
// own them (by providerID, or by VSphereVM while one is cloned), and its
// unowned stale VM fits lab-1's name better: none is lab's orphan. Only
// lab's own stale VM is. Before, every lab-1-* VM was reported as lab's,
// with the advice to delete it.
func TestCheckInventoryTwoClusters(t *testing.T) {
	t.Parallel()
	machine := func(cluster, name, uuid string) map[string]any { return vsphereMachine(cluster, name, uuid, "Running") }
	lab := []map[string]any{machine("lab", "lab-md-0-a", "4233aaaa-0000-0000-0000-000000000001")}
	lab1 := []map[string]any{machine("lab-1", "lab-1-md-0-b", "4233bbbb-0000-0000-0000-000000000001")}
	cloning := map[string]any{"metadata": map[string]any{"name": "lab-1-md-0-c"}, "spec": map[string]any{}}
	s := ManagementState{Cluster: "default/lab", Machines: lab, AllMachines: append(slices.Clone(lab), lab1...), VSphereVMs: []map[string]any{cloning}}
	vms := []providers.VMInfo{
		{Name: "lab-md-0-a", UUID: "4233aaaa-0000-0000-0000-000000000001", PowerState: providers.PoweredOn},
		{Name: "lab-1-md-0-b", UUID: "4233BBBB-0000-0000-0000-000000000001", PowerState: providers.PoweredOn},
		{Name: "lab-1-md-0-c", UUID: "4233bbbb-0000-0000-0000-000000000002", PowerState: providers.PoweredOff},
		{Name: "lab-1-cp-stale", UUID: "4233bbbb-0000-0000-0000-000000000003", PowerState: providers.PoweredOn},
		{Name: "lab-cp-stale", UUID: "4233aaaa-0000-0000-0000-000000000009", PowerState: providers.PoweredOn},
	}
	got := CheckInventory(s, vms)
	if ids := findingIDs(got); ids != "vcenter-orphan-vm" {
		t.Fatalf("findings %s: %+v", ids, got)
	}
	if o := got[0].Objects; len(o) != 1 || o[0] != "VirtualMachine/lab-cp-stale" {
		t.Errorf("orphans %v, want lab's own stale VM alone", o)
	}
}

// vsphereMachine is a Machine of cluster ("" for no label) whose VM CAPV
// names after it, with providerID vsphere://uuid ("" for none yet).
func vsphereMachine(cluster, name, uuid, phase string) map[string]any {
	m := capiMachine(name, true, "", nil)
	if cluster != "" {
		m["metadata"].(map[string]any)["labels"] = map[string]any{"cluster.x-k8s.io/cluster-name": cluster}
	}
	m["spec"] = map[string]any{"providerID": "vsphere://" + uuid, "infrastructureRef": map[string]any{"name": name}}
	if uuid == "" {
		delete(m["spec"].(map[string]any), "providerID")
	}
	m["status"] = map[string]any{"phase": phase}
	return m
}
