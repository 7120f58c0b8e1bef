package providers

import "context"

// Hosts fails the ESXi host a VM runs on and brings it back: every VM on
// it down at once, as a host failure takes them (host.fail).
type Hosts interface {
	// HostOf is the host obj's VM runs on (Kind HostSystem, ID its
	// managed object reference) with the VMs powered on there now in
	// AttrVMs, and what those VMs are to the run: its Machines (with
	// their etcd attributes) where the provider knows a management
	// cluster, else the VMs themselves. A host's failure takes them all.
	HostOf(ctx context.Context, obj Object) (host Object, down []Object, err error)
	// FailHost powers off hard, at once, each VM of vms (references, as
	// AttrVMs lists them), then disconnects host from vCenter: as after a
	// host failure, vCenter then does nothing to the VMs until it is back.
	FailHost(ctx context.Context, host Object, vms []string) error
	// RestoreHost connects host again and powers on those of vms still
	// powered off; one deleted, or started by another hand (vSphere HA,
	// CAPV) meanwhile, is left as it is.
	RestoreHost(ctx context.Context, host Object, vms []string) error
	// EnterMaintenance evacuates host as DRS does for maintenance mode:
	// each VM of vms still on it migrated, running, to another connected
	// host of its cluster, or shut down where there is none; then the
	// host enters maintenance mode.
	EnterMaintenance(ctx context.Context, host Object, vms []string) error
	// ExitMaintenance takes host out of maintenance mode and powers on
	// those of vms still powered off (RestoreHost's rule). The migrated
	// VMs stay where they are, as DRS may leave them.
	ExitMaintenance(ctx context.Context, host Object, vms []string) error
}

// AttrVMs lists, comma-separated, the references of the VMs powered on on
// a host when HostOf read it.
const AttrVMs Attribute = "vms"

// VCenterReach cuts CAPV's connection to its vCenter and restores it,
// while faultline's own still reaches it (vcenter.unreachable).
type VCenterReach interface {
	// SetVCenterReachable cuts (false) or restores CAPV's connection.
	SetVCenterReachable(ctx context.Context, reachable bool) error
}
