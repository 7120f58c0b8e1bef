package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// hostFaults are the faults on the ESXi host a target's VM runs on: each
// acts once on each host its target's objects run on (faultDef.onHost),
// and the host, with the VMs it ran, is what the journal records.
var hostFaults = map[string]faultDef{
	"host.fail": {
		capability: providers.CapHosts, onHost: true, takesEtcd: takesEtcdMember, poweredOnBy: byHA,
		summary: "fail the ESXi host the target's VM runs on: every VM powered on there is powered off hard at once and the host disconnected, so vCenter refuses to act on them (CAPV can neither power them on nor delete them) until it is back; undo connects the host again and powers on those of its VMs still off (vSphere HA, when on, restarts them elsewhere first)",
		inject: using(providers.CapHosts, func(ctx context.Context, h providers.Hosts, host providers.Object, _ map[string]string) error {
			return h.FailHost(ctx, host, hostVMs(host))
		}),
		undo: func(host providers.Object, _ map[string]string) UndoAction {
			return UndoAction{Action: "host.restore", Target: host, Params: map[string]string{"vms": host.Attributes[providers.AttrVMs]}}
		},
	},
	"vcenter.unreachable": {
		capability: providers.CapVCenterReach, once: true,
		summary: "cut CAPV's connection to its vCenter (given no target: it acts on the management cluster's CAPV): every call CAPV makes fails, so it can neither create, power nor delete a VM, while faultline still reaches vCenter; undo restores the connection. In the lab at the relay its clusters reach vcsim through; on a management cluster with a NetworkPolicy on CAPV's pods that denies their egress to the vCenter the scope's objects name, proven first by a probe pod of faultline's image (--image) beside CAPV's, and refused, saying why, where the cluster's network does not enforce it (or a proxy, a host-network pod or another policy would let CAPV through)",
		inject: using(providers.CapVCenterReach, func(ctx context.Context, v providers.VCenterReach, _ providers.Object, _ map[string]string) error {
			return v.SetVCenterReachable(ctx, false)
		}),
		undo: func(obj providers.Object, _ map[string]string) UndoAction {
			return UndoAction{Action: "vcenter.reachable", Target: obj}
		},
	},
	"host.maintenance": {
		capability: providers.CapHosts, onHost: true,
		summary: "put the ESXi host the target's VM runs on into maintenance mode, as an operator's rolling maintenance does: each VM powered on there is migrated, running, to another connected host of its cluster (vMotion, as DRS evacuates a host), or shut down where there is none; undo takes the host out of maintenance mode and powers on those of its VMs still off (the migrated ones stay where they are)",
		inject: using(providers.CapHosts, func(ctx context.Context, h providers.Hosts, host providers.Object, _ map[string]string) error {
			return h.EnterMaintenance(ctx, host, hostVMs(host))
		}),
		undo: func(host providers.Object, _ map[string]string) UndoAction {
			return UndoAction{Action: "host.exit-maintenance", Target: host, Params: map[string]string{"vms": host.Attributes[providers.AttrVMs]}}
		},
	},
}

var hostUndos = map[string]func(ctx context.Context, p providers.Provider, u UndoAction) error{
	// Not undoUsing: the restore needs none of what makes the cut usable
	// (a user's cluster's probe image), which recover has no flag for.
	"vcenter.reachable": func(ctx context.Context, p providers.Provider, _ UndoAction) error {
		v, ok := p.(providers.VCenterReach)
		if !ok {
			return providers.Unsupported(p, providers.CapVCenterReach)
		}
		return v.SetVCenterReachable(ctx, true)
	},
	"host.restore": undoUsing(providers.CapHosts, func(ctx context.Context, h providers.Hosts, u UndoAction) error {
		return h.RestoreHost(ctx, u.Target, splitList(u.Params["vms"]))
	}),
	"host.exit-maintenance": undoUsing(providers.CapHosts, func(ctx context.Context, h providers.Hosts, u UndoAction) error {
		return h.ExitMaintenance(ctx, u.Target, splitList(u.Params["vms"]))
	}),
}

// hostVMs are the VMs AttrVMs lists on host.
func hostVMs(host providers.Object) []string {
	return splitList(host.Attributes[providers.AttrVMs])
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// hostDown is a host a fault acts on, and what its failure takes down.
type hostDown struct {
	host providers.Object
	down []providers.Object
}

// hostsOf maps objs to the hosts their VMs run on, each host once (two
// targets on one host fail it once).
func hostsOf(ctx context.Context, p providers.Provider, objs []providers.Object) ([]hostDown, error) {
	h, err := providers.As[providers.Hosts](p, providers.CapHosts)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []hostDown
	for _, o := range objs {
		host, on, err := h.HostOf(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("host of %s: %w", o, err)
		}
		if !seen[host.ID] {
			seen[host.ID] = true
			out = append(out, hostDown{host: host, down: on})
		}
	}
	return out, nil
}
