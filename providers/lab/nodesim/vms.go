package nodesim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vmware/govmomi/vim25/types"
)

// vmState is a VM as vcsim reports it.
type vmState struct {
	ref      types.ManagedObjectReference
	on       bool
	hasIP    bool
	bootTime time.Time
}

// inventory reads every VM's BIOS UUID, power state, boot time and IP in
// one call.
func (s *Sim) inventory(ctx context.Context) (map[string]vmState, error) {
	vms, err := s.vmView.Read(ctx, s.vc, "config.uuid", "runtime.powerState", "summary.runtime.bootTime", "guest.ipAddress")
	if err != nil {
		return nil, err
	}
	out := make(map[string]vmState, len(vms))
	for _, vm := range vms {
		if vm.Config == nil {
			continue
		}
		st := vmState{ref: vm.Reference(), on: vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn}
		// SetGuestIP sets guest.ipAddress with the adapter's address.
		st.hasIP = vm.Guest != nil && vm.Guest.IpAddress != ""
		if bt := vm.Summary.Runtime.BootTime; bt != nil {
			st.bootTime = *bt
		}
		out[vm.Config.Uuid] = st
	}
	return out, nil
}

// forgetRemoved drops what the simulator holds of clusters Renew removed:
// their VMs, kubeadm objects, admitters and policy webhooks.
func (s *Sim) forgetRemoved(clusters map[string]labCluster) {
	nodes := map[string][]string{}
	for name, vm := range s.vms {
		if _, ok := clusters[vm.cluster]; !ok {
			delete(s.vms, name)
			delete(s.podsWritten, name)
			s.views.Remove(name)
			nodes[vm.cluster] = append(nodes[vm.cluster], name)
		}
	}
	for cluster := range s.addons {
		if _, ok := clusters[cluster]; !ok {
			delete(s.addons, cluster)
			delete(s.ipam, cluster)
		}
	}
	for cluster, names := range nodes {
		s.faults.forgetCluster(cluster, names)
	}
	s.admitters.keepOnly(clusters)
	for key, hook := range s.webhooks {
		cluster := strings.Join(strings.SplitN(key, "/", 3)[:2], "/")
		if _, ok := clusters[cluster]; ok {
			continue
		}
		if err := hook.close(); err != nil {
			s.log.V(1).Info("stop policy webhook", "service", key, "error", err.Error())
		}
		delete(s.webhooks, key)
	}
}

// assignIP plays DHCP. The addresses come from TEST-NET-1 (RFC 5737),
// which no host has: CAPV ignores loopback addresses, and nothing in the
// lab ever dials a node address.
func (s *Sim) assignIP(vm *simVM) error {
	s.nextIP++
	ip := fmt.Sprintf("192.0.2.%d", 1+s.nextIP%250)
	if err := s.setIP(vm.ref, ip); err != nil {
		return fmt.Errorf("assign IP to %s: %w", vm.name, err)
	}
	return nil
}
