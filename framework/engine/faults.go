package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// UndoAction is how to revert one fault. It is written to the journal before
// the fault is applied, so it must say everything the undo needs.
type UndoAction struct {
	// Action is an undo kind from undoCatalogue, or UndoNone.
	Action string            `json:"action"`
	Target providers.Object  `json:"target"`
	Params map[string]string `json:"params,omitempty"`
	// Note tells a reader what happens when there is nothing to undo.
	Note string `json:"note,omitempty"`
}

// UndoNone marks a fault that cannot be reverted (a destroyed VM).
const UndoNone = "none"

// faultDef describes one fault kind: what it needs, how to apply it to one
// object, and how it is undone.
type faultDef struct {
	capability providers.Capability
	params     []string
	summary    string
	inject     func(ctx context.Context, p providers.Provider, obj providers.Object, params map[string]string) error
	// injectStaged, set instead of inject, also gets a function that
	// reports each stage of a long fault (an upgrade).
	injectStaged func(ctx context.Context, p providers.Provider, obj providers.Object, params map[string]string, stage func(string)) error
	undo         func(obj providers.Object, params map[string]string) UndoAction
	// check, when set, validates the params when the file loads.
	check func(params map[string]string) []scenario.ArgError
	// backups: the fault keeps backups; the runner gives it a folder in
	// the backups param.
	backups bool
	// takesEtcd, when set, tells whether the fault takes down the etcd
	// member an object may host; the runner keeps such faults within
	// quorum (see checkBlastRadius).
	takesEtcd func(params map[string]string) bool
	// standalone: the fault may be given no target when its params name
	// the management cluster (an object written there belongs to no
	// Machine); it is applied once.
	standalone bool
	// once: the fault acts on the management cluster as a whole and is
	// given no target (an upgrade of its controllers).
	once bool
	// perCluster: the fault acts on the Cluster of its target's objects,
	// once for each Cluster (a rollout).
	perCluster bool
	// onHost: the fault acts on the ESXi host of its target's objects,
	// once for each host (hostsOf); everything on the host goes down
	// with it, which the blast-radius guard counts.
	onHost bool
	// poweredOnBy, on a fault that powers off what its host runs, names
	// who powers those VMs on again (the timeline's vm-powered-on).
	poweredOnBy string
}

// vmPowerFault is a fault of a VM's power; it takes down the etcd member
// the VM may host.
func vmPowerFault(summary string, undo func(providers.Object, map[string]string) UndoAction, f func(context.Context, providers.VMPower, providers.Object) error) faultDef {
	return faultDef{
		capability: providers.CapVMPower, summary: summary, undo: undo, takesEtcd: takesEtcdMember,
		inject: using(providers.CapVMPower, func(ctx context.Context, v providers.VMPower, obj providers.Object, _ map[string]string) error {
			return f(ctx, v, obj)
		}),
	}
}

func powerOnUndo(obj providers.Object, _ map[string]string) UndoAction {
	return UndoAction{Action: "vm.power-on", Target: obj}
}

// faultCatalogue lists every fault a scenario can inject.
var faultCatalogue = mergeMaps(nodeAndVMFaults, hostFaults, objectFaults, upgradeFaults)

// undoCatalogue runs journaled undo actions. Each undo is idempotent, so a
// recovery may replay one that had already run before a crash.
var undoCatalogue = mergeMaps(nodeAndVMUndos, hostUndos, objectUndos)

func mergeMaps[V any](sets ...map[string]V) map[string]V {
	out := map[string]V{}
	for _, set := range sets {
		for k, v := range set {
			out[k] = v
		}
	}
	return out
}

// nodeAndVMFaults are the faults on VMs and on nodes' processes.
var nodeAndVMFaults = map[string]faultDef{
	"vm.power-off": vmPowerFault("hard power-off of a VM; undo powers it on", powerOnUndo,
		func(ctx context.Context, v providers.VMPower, obj providers.Object) error {
			return v.PowerOff(ctx, obj)
		}),
	"vm.shutdown-guest": vmPowerFault("guest OS shutdown of a VM; undo powers it on", powerOnUndo,
		func(ctx context.Context, v providers.VMPower, obj providers.Object) error {
			return v.ShutdownGuest(ctx, obj)
		}),
	"vm.suspend": vmPowerFault("suspend a VM; undo powers it on", powerOnUndo,
		func(ctx context.Context, v providers.VMPower, obj providers.Object) error { return v.Suspend(ctx, obj) }),
	"vm.reset": vmPowerFault("hard reset of a VM; nothing to undo",
		func(obj providers.Object, _ map[string]string) UndoAction {
			return UndoAction{Action: UndoNone, Target: obj, Note: "a reset is over once the VM has restarted"}
		},
		func(ctx context.Context, v providers.VMPower, obj providers.Object) error { return v.Reset(ctx, obj) }),
	"vm.destroy": {
		takesEtcd:  takesEtcdMember,
		capability: providers.CapVMLifecycle, summary: "power off and delete a VM from disk; cannot be undone",
		inject: using(providers.CapVMLifecycle, func(ctx context.Context, v providers.VMLifecycle, obj providers.Object, _ map[string]string) error {
			return v.Destroy(ctx, obj)
		}),
		undo: func(obj providers.Object, _ map[string]string) UndoAction {
			return UndoAction{Action: UndoNone, Target: obj, Note: "the VM is deleted; only its owner (CAPV, for a Machine's VM) can recreate it"}
		},
	},
	"node.stop-kubelet": {
		capability: providers.CapNodeKubelet, summary: "stop the kubelet of a Machine's node; undo starts it",
		inject: using(providers.CapNodeKubelet, func(ctx context.Context, k providers.NodeKubelet, obj providers.Object, _ map[string]string) error {
			return k.SetKubelet(ctx, obj, false)
		}),
		undo: func(obj providers.Object, _ map[string]string) UndoAction {
			return UndoAction{Action: "node.start-kubelet", Target: obj}
		},
	},
	"node.stop-etcd": {
		capability: providers.CapNodeStaticPods, summary: "stop the etcd member on a control-plane Machine's node; undo starts it",
		inject:    setStaticPod("etcd", false),
		undo:      startStaticPodUndo("etcd"),
		takesEtcd: takesEtcdMember,
	},
	"etcd.stuck-leader": {
		capability: providers.CapEtcdLeadership,
		summary:    "make the etcd member on a control-plane Machine's node the leader, cut off from its peers (no member can join); undo moves leadership to another member (etcdctl move-leader)",
		inject: using(providers.CapEtcdLeadership, func(ctx context.Context, e providers.EtcdLeadership, obj providers.Object, _ map[string]string) error {
			return e.SetLeaderStuck(ctx, obj, true)
		}),
		undo: func(obj providers.Object, _ map[string]string) UndoAction {
			return UndoAction{Action: "etcd.move-leader", Target: obj}
		},
	},
	"etcd.slow-member-start": {
		capability: providers.CapEtcdMembers, params: []string{"delay"}, perCluster: true, check: checkDelay,
		summary: "the control planes that join the target's cluster from now on start their etcd member delay after kubeadm adds it as a learner (an image pull, a slow disk): the Node registers, the member is an unnamed learner meanwhile (cluster-api #14197's window); undo starts them at once",
		inject: using(providers.CapEtcdMembers, func(ctx context.Context, e providers.EtcdMembers, obj providers.Object, params map[string]string) error {
			d, err := time.ParseDuration(params["delay"])
			if err != nil {
				return fmt.Errorf("param delay: %w", err)
			}
			return e.SetMemberStartDelay(ctx, obj, d)
		}),
		undo: func(obj providers.Object, _ map[string]string) UndoAction {
			return UndoAction{Action: "etcd.member-start-at-once", Target: obj}
		},
	},
	"node.remove-static-pod": {
		capability: providers.CapNodeStaticPods, params: []string{"component"},
		summary: "remove a control-plane static pod (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) from a Machine's node; undo puts its manifest back",
		inject: func(ctx context.Context, p providers.Provider, obj providers.Object, params map[string]string) error {
			return setStaticPod(params["component"], false)(ctx, p, obj, params)
		},
		undo: func(obj providers.Object, params map[string]string) UndoAction {
			return startStaticPodUndo(params["component"])(obj, params)
		},
		check:     checkComponent,
		takesEtcd: func(params map[string]string) bool { return params["component"] == "etcd" },
	},
	"vm.disconnect-nic": {
		takesEtcd:  takesEtcdMember,
		capability: providers.CapVMNetwork, params: []string{"nic"}, summary: "disconnect a VM's network adapter; undo reconnects it",
		inject: using(providers.CapVMNetwork, func(ctx context.Context, v providers.VMNetwork, obj providers.Object, params map[string]string) error {
			return v.SetNICConnected(ctx, obj, params["nic"], false)
		}),
		undo: func(obj providers.Object, params map[string]string) UndoAction {
			return UndoAction{Action: "vm.nic-connect", Target: obj, Params: map[string]string{"nic": params["nic"]}}
		},
	},
}

// gone is err, or nil when its object is gone (ErrNotFound): nothing is
// left to undo on it.
func gone(err error) error {
	if errors.Is(err, providers.ErrNotFound) {
		return fmt.Errorf("%w: the target is gone (%v)", ErrNothingToUndo, err)
	}
	return err
}

// ErrNothingToUndo is an undo that found its fault already gone (the VM
// deleted since, or powered on by its owner): the fault counts as undone,
// and the error's text says why nothing was done.
var ErrNothingToUndo = errors.New("nothing to undo")

// inFlightWait bounds how long a refused power-on waits for one already
// in flight to land.
const inFlightWait = 15 * time.Second

// poweredOnWithin tells whether obj is powered on, or turns so within d
// (or before ctx ends), read every half second.
func poweredOnWithin(ctx context.Context, v providers.VMPower, obj providers.Object, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if state, err := v.PowerState(ctx, obj); err == nil && state == providers.PoweredOn {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

var nodeAndVMUndos = map[string]func(ctx context.Context, p providers.Provider, u UndoAction) error{
	"vm.power-on": undoUsing(providers.CapVMPower, func(ctx context.Context, v providers.VMPower, u UndoAction) error {
		state, err := v.PowerState(ctx, u.Target)
		if errors.Is(err, providers.ErrNotFound) {
			// Deleted since (a remediated Machine's VM): nothing is left
			// to power on.
			return fmt.Errorf("%w: the VM is gone", ErrNothingToUndo)
		}
		if err != nil {
			return err
		}
		if state == providers.PoweredOn {
			return fmt.Errorf("%w: the VM is powered on already", ErrNothingToUndo)
		}
		err = v.PowerOn(ctx, u.Target)
		if errors.Is(err, providers.ErrInvalidState) && poweredOnWithin(ctx, v, u.Target, inFlightWait) {
			// Another power-on was in flight (an undo a signal cut
			// short; vCenter refuses a second with InvalidPowerState):
			// it landed, and the fault is undone.
			return nil
		}
		return err
	}),
	"node.start-kubelet": undoUsing(providers.CapNodeKubelet, func(ctx context.Context, k providers.NodeKubelet, u UndoAction) error {
		// A node whose VM was deleted since (a remediated Machine's) has
		// no kubelet left to start.
		return gone(k.SetKubelet(ctx, u.Target, true))
	}),
	"node.start-static-pod": undoUsing(providers.CapNodeStaticPods, func(ctx context.Context, k providers.NodeStaticPods, u UndoAction) error {
		return gone(k.SetStaticPod(ctx, u.Target, u.Params["component"], true))
	}),
	"etcd.move-leader": undoUsing(providers.CapEtcdLeadership, func(ctx context.Context, e providers.EtcdLeadership, u UndoAction) error {
		return e.SetLeaderStuck(ctx, u.Target, false)
	}),
	"etcd.member-start-at-once": undoUsing(providers.CapEtcdMembers, func(ctx context.Context, e providers.EtcdMembers, u UndoAction) error {
		return e.SetMemberStartDelay(ctx, u.Target, 0)
	}),
	"vm.nic-connect": undoUsing(providers.CapVMNetwork, func(ctx context.Context, v providers.VMNetwork, u UndoAction) error {
		return v.SetNICConnected(ctx, u.Target, u.Params["nic"], true)
	}),
}

// checkDelay wants param delay, a positive duration such as 15s.
func checkDelay(params map[string]string) []scenario.ArgError {
	d, err := time.ParseDuration(params["delay"])
	if err != nil || d <= 0 {
		return []scenario.ArgError{{Arg: "delay", Msg: fmt.Sprintf("got %q, expected a positive duration such as 15s", params["delay"])}}
	}
	return nil
}

func checkComponent(params map[string]string) []scenario.ArgError {
	c := params["component"]
	if c == "" {
		return []scenario.ArgError{{Arg: "component", Msg: "required: one of " + strings.Join(providers.StaticPodComponents, ", ")}}
	}
	if !slices.Contains(providers.StaticPodComponents, c) {
		return []scenario.ArgError{{Arg: "component", Msg: fmt.Sprintf("got %q, expected one of %s", c, strings.Join(providers.StaticPodComponents, ", "))}}
	}
	return nil
}

func setStaticPod(component string, running bool) func(context.Context, providers.Provider, providers.Object, map[string]string) error {
	return using(providers.CapNodeStaticPods, func(ctx context.Context, k providers.NodeStaticPods, obj providers.Object, _ map[string]string) error {
		return k.SetStaticPod(ctx, obj, component, running)
	})
}

func startStaticPodUndo(component string) func(providers.Object, map[string]string) UndoAction {
	return func(obj providers.Object, _ map[string]string) UndoAction {
		return UndoAction{Action: "node.start-static-pod", Target: obj, Params: map[string]string{"component": component}}
	}
}

// RunUndo performs one journaled undo action against p.
func RunUndo(ctx context.Context, p providers.Provider, u UndoAction) error {
	if u.Action == UndoNone {
		return nil
	}
	run, ok := undoCatalogue[u.Action]
	if !ok {
		return fmt.Errorf("undo %s of %s: unknown undo action (journal written by a newer faultline?)", u.Action, u.Target)
	}
	err := run(ctx, p, u)
	switch {
	case errors.Is(err, ErrNothingToUndo):
		return err // says what it found, for the result's note
	case err != nil:
		return fmt.Errorf("undo %s of %s: %w", u.Action, u.Target, err)
	}
	return nil
}

// using is a fault that needs T, the interface behind capability c, of
// the provider.
func using[T any](c providers.Capability, f func(ctx context.Context, t T, obj providers.Object, params map[string]string) error) func(context.Context, providers.Provider, providers.Object, map[string]string) error {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, params map[string]string) error {
		t, err := providers.As[T](p, c)
		if err != nil {
			return err
		}
		return f(ctx, t, obj, params)
	}
}

// undoUsing is using for an undo action.
func undoUsing[T any](c providers.Capability, f func(ctx context.Context, t T, u UndoAction) error) func(context.Context, providers.Provider, UndoAction) error {
	return func(ctx context.Context, p providers.Provider, u UndoAction) error {
		t, err := providers.As[T](p, c)
		if err != nil {
			return err
		}
		return f(ctx, t, u)
	}
}
