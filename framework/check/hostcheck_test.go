package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/providers"
)

// TestCheckControlPlaneHosts: two of three control planes on one host is
// etcd's quorum there (an error naming the host and the Machines); two of
// five a warning; three spread over three hosts, nothing. A worker on a
// control plane's host, and a VM whose host vCenter does not say, count
// for nothing.
func TestCheckControlPlaneHosts(t *testing.T) {
	state := func(hosts ...string) (ManagementState, []providers.VMInfo) {
		s := ManagementState{Cluster: "default/prod-1"}
		var vms []providers.VMInfo
		for i, h := range hosts {
			uuid := fmt.Sprintf("4233%04d-0000-0000-0000-000000000000", i)
			name := fmt.Sprintf("prod-1-cp-%d", i)
			s.Machines = append(s.Machines, vsphereMachine("", name, uuid, "Running"))
			vms = append(vms, providers.VMInfo{Name: name, UUID: uuid, PowerState: providers.PoweredOn, Host: h})
		}
		worker := capiMachine("prod-1-md-0", false, "", nil)
		worker["spec"] = map[string]any{"providerID": "vsphere://4233ffff-0000-0000-0000-000000000000"}
		s.Machines = append(s.Machines, worker)
		vms = append(vms, providers.VMInfo{Name: "prod-1-md-0", UUID: "4233ffff-0000-0000-0000-000000000000", Host: hosts[0]})
		return s, vms
	}
	s, vms := state("esx-1", "esx-1", "esx-2")
	got := CheckControlPlaneHosts(s, vms)
	if len(got) != 1 || got[0].ID != "control-planes-share-host" || got[0].Severity != "error" ||
		!strings.Contains(got[0].Message, "2 of the 3 control-plane Machines of default/prod-1 run on host esx-1 (prod-1-cp-0, prod-1-cp-1)") ||
		!strings.Contains(got[0].Message, "etcd's quorum") || got[0].Objects[0] != "HostSystem/esx-1" {
		t.Errorf("two of three on esx-1: %+v", got)
	}
	s, vms = state("esx-1", "esx-1", "esx-2", "esx-3", "esx-4")
	if got := CheckControlPlaneHosts(s, vms); len(got) != 1 || got[0].Severity != "warning" {
		t.Errorf("two of five on esx-1: %+v", got)
	}
	s, vms = state("esx-1", "esx-2", "esx-3")
	if got := CheckControlPlaneHosts(s, vms); len(got) != 0 {
		t.Errorf("spread: %+v", got)
	}
	s, vms = state("", "", "esx-2")
	if got := CheckControlPlaneHosts(s, vms); len(got) != 0 {
		t.Errorf("hosts unknown: %+v", got)
	}
}
