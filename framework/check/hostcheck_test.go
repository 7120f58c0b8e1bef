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

// TestCheckControlPlaneFailureDomains: three control planes, two in fd-a
// while the Cluster offers fd-a, fd-b and fd-c: a quorum in one domain;
// spread over them, nothing; a Cluster of one domain, nothing.
func TestCheckControlPlaneFailureDomains(t *testing.T) {
	state := func(offered []string, in ...string) ManagementState {
		s := ManagementState{Cluster: "default/prod-1"}
		var fds []any
		for _, d := range offered {
			fds = append(fds, map[string]any{"name": d, "controlPlane": true})
		}
		fds = append(fds, map[string]any{"name": "workers-only", "controlPlane": false})
		s.ClusterObject = map[string]any{"status": map[string]any{"failureDomains": fds}}
		for i, fd := range in {
			m := vsphereMachine("", fmt.Sprintf("prod-1-cp-%d", i), fmt.Sprintf("4233%04d-0000-0000-0000-000000000000", i), "Running")
			m["spec"].(map[string]any)["failureDomain"] = fd
			s.Machines = append(s.Machines, m)
		}
		return s
	}
	three := []string{"fd-a", "fd-b", "fd-c"}
	got := CheckControlPlaneFailureDomains(state(three, "fd-a", "fd-a", "fd-b"))
	if len(got) != 1 || got[0].ID != "control-planes-share-failure-domain" || got[0].Severity != "error" || got[0].Objects[0] != "FailureDomain/fd-a" ||
		!strings.Contains(got[0].Message, "2 of the 3 control-plane Machines of default/prod-1 are in failure domain fd-a (prod-1-cp-0, prod-1-cp-1) while the Cluster offers 3 for control planes (fd-a, fd-b, fd-c)") {
		t.Errorf("two of three in fd-a: %+v", got)
	}
	if got := CheckControlPlaneFailureDomains(state(three, "fd-a", "fd-b", "fd-c")); len(got) != 0 {
		t.Errorf("spread: %+v", got)
	}
	if got := CheckControlPlaneFailureDomains(state([]string{"fd-a"}, "fd-a", "fd-a", "fd-a")); len(got) != 0 {
		t.Errorf("one domain offered: %+v", got)
	}
}
