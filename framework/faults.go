package framework

import (
	"context"
	"errors"
	"fmt"
)

// UndoAction is how to revert one fault. It is written to the journal before
// the fault is applied, so it must say everything the undo needs.
type UndoAction struct {
	// Action is an undo kind from undoCatalogue, or UndoNone.
	Action string            `json:"action"`
	Target Object            `json:"target"`
	Params map[string]string `json:"params,omitempty"`
	// Note tells a reader what happens when there is nothing to undo.
	Note string `json:"note,omitempty"`
}

// UndoNone marks a fault that cannot be reverted (a destroyed VM).
const UndoNone = "none"

// faultDef describes one fault kind: what it needs, how to apply it to one
// object, and how it is undone.
type faultDef struct {
	capability Capability
	params     []string
	summary    string
	inject     func(ctx context.Context, p Provider, obj Object, params map[string]string) error
	undo       func(obj Object, params map[string]string) UndoAction
}

func powerOnUndo(obj Object, _ map[string]string) UndoAction {
	return UndoAction{Action: "vm.power-on", Target: obj}
}

// faultCatalogue lists every fault a scenario can inject.
var faultCatalogue = map[string]faultDef{
	"vm.power-off": {
		capability: CapVMPower, summary: "hard power-off of a VM; undo powers it on",
		inject: withVMPower(func(ctx context.Context, v VMPower, obj Object) error { return v.PowerOff(ctx, obj) }),
		undo:   powerOnUndo,
	},
	"vm.shutdown-guest": {
		capability: CapVMPower, summary: "guest OS shutdown of a VM; undo powers it on",
		inject: withVMPower(func(ctx context.Context, v VMPower, obj Object) error { return v.ShutdownGuest(ctx, obj) }),
		undo:   powerOnUndo,
	},
	"vm.suspend": {
		capability: CapVMPower, summary: "suspend a VM; undo powers it on",
		inject: withVMPower(func(ctx context.Context, v VMPower, obj Object) error { return v.Suspend(ctx, obj) }),
		undo:   powerOnUndo,
	},
	"vm.reset": {
		capability: CapVMPower, summary: "hard reset of a VM; nothing to undo",
		inject: withVMPower(func(ctx context.Context, v VMPower, obj Object) error { return v.Reset(ctx, obj) }),
		undo: func(obj Object, _ map[string]string) UndoAction {
			return UndoAction{Action: UndoNone, Target: obj, Note: "a reset is over once the VM has restarted"}
		},
	},
	"vm.destroy": {
		capability: CapVMLifecycle, summary: "power off and delete a VM from disk; cannot be undone",
		inject: func(ctx context.Context, p Provider, obj Object, _ map[string]string) error {
			v, err := as[VMLifecycle](p, CapVMLifecycle)
			if err != nil {
				return err
			}
			return v.Destroy(ctx, obj)
		},
		undo: func(obj Object, _ map[string]string) UndoAction {
			return UndoAction{Action: UndoNone, Target: obj, Note: "the VM is deleted; only its owner (CAPV, for a Machine's VM) can recreate it"}
		},
	},
	"node.stop-kubelet": {
		capability: CapNodeKubelet, summary: "stop the kubelet of a Machine's node; undo starts it",
		inject: func(ctx context.Context, p Provider, obj Object, _ map[string]string) error {
			k, err := as[NodeKubelet](p, CapNodeKubelet)
			if err != nil {
				return err
			}
			return k.SetKubelet(ctx, obj, false)
		},
		undo: func(obj Object, _ map[string]string) UndoAction {
			return UndoAction{Action: "node.start-kubelet", Target: obj}
		},
	},
	"vm.disconnect-nic": {
		capability: CapVMNetwork, params: []string{"nic"}, summary: "disconnect a VM's network adapter; undo reconnects it",
		inject: func(ctx context.Context, p Provider, obj Object, params map[string]string) error {
			v, err := as[VMNetwork](p, CapVMNetwork)
			if err != nil {
				return err
			}
			return v.SetNICConnected(ctx, obj, params["nic"], false)
		},
		undo: func(obj Object, params map[string]string) UndoAction {
			return UndoAction{Action: "vm.nic-connect", Target: obj, Params: map[string]string{"nic": params["nic"]}}
		},
	},
}

// undoCatalogue runs journaled undo actions. Each undo is idempotent, so a
// recovery may replay one that had already run before a crash.
var undoCatalogue = map[string]func(ctx context.Context, p Provider, u UndoAction) error{
	"vm.power-on": func(ctx context.Context, p Provider, u UndoAction) error {
		v, err := as[VMPower](p, CapVMPower)
		if err != nil {
			return err
		}
		state, err := v.PowerState(ctx, u.Target)
		if errors.Is(err, ErrNotFound) {
			// Deleted since (a remediated Machine's VM): nothing is left
			// to power on.
			return nil
		}
		if err != nil {
			return err
		}
		if state == PoweredOn {
			return nil
		}
		return v.PowerOn(ctx, u.Target)
	},
	"node.start-kubelet": func(ctx context.Context, p Provider, u UndoAction) error {
		k, err := as[NodeKubelet](p, CapNodeKubelet)
		if err != nil {
			return err
		}
		return k.SetKubelet(ctx, u.Target, true)
	},
	"vm.nic-connect": func(ctx context.Context, p Provider, u UndoAction) error {
		v, err := as[VMNetwork](p, CapVMNetwork)
		if err != nil {
			return err
		}
		return v.SetNICConnected(ctx, u.Target, u.Params["nic"], true)
	},
}

// RunUndo performs one journaled undo action against p.
func RunUndo(ctx context.Context, p Provider, u UndoAction) error {
	if u.Action == UndoNone {
		return nil
	}
	run, ok := undoCatalogue[u.Action]
	if !ok {
		return fmt.Errorf("undo %s of %s: unknown undo action (journal written by a newer faultline?)", u.Action, u.Target)
	}
	if err := run(ctx, p, u); err != nil {
		return fmt.Errorf("undo %s of %s: %w", u.Action, u.Target, err)
	}
	return nil
}

// FaultKinds lists the fault kinds with a one-line summary each.
func FaultKinds() map[string]string {
	out := make(map[string]string, len(faultCatalogue))
	for k, d := range faultCatalogue {
		out[k] = d.summary
	}
	return out
}

func faultKindList() []string { return sortedKeys(faultCatalogue) }

func withVMPower(f func(context.Context, VMPower, Object) error) func(context.Context, Provider, Object, map[string]string) error {
	return func(ctx context.Context, p Provider, obj Object, _ map[string]string) error {
		v, err := as[VMPower](p, CapVMPower)
		if err != nil {
			return err
		}
		return f(ctx, v, obj)
	}
}

// as returns p as the capability interface T, or an ErrUnsupported error.
func as[T any](p Provider, c Capability) (T, error) {
	v, ok := p.(T)
	if !ok {
		return v, unsupported(p, c)
	}
	return v, nil
}
