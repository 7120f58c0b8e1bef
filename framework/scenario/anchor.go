package scenario

import (
	"strings"
)

// Anchor names a moment of the run: "start", "inject" (the latest injection
// before the step), "inject:<step>", "undo:<step>" or "phase:<name>". Code
// builds them with the constants and functions below, never by hand.
type Anchor string

// The anchors without a name.
const (
	AnchorStart  Anchor = "start"
	AnchorInject Anchor = "inject"
)

// The kinds of anchor that name a step or a phase.
const (
	anchorKindInject = "inject"
	anchorKindUndo   = "undo"
	anchorKindPhase  = "phase"
)

// InjectAnchor is the moment inject step step applied its fault.
func InjectAnchor(step string) Anchor { return Anchor(anchorKindInject + ":" + step) }

// UndoAnchor is the moment undo step step undid its fault.
func UndoAnchor(step string) Anchor { return Anchor(anchorKindUndo + ":" + step) }

// PhaseAnchor is the moment phase name was reached.
func PhaseAnchor(name string) Anchor { return Anchor(anchorKindPhase + ":" + name) }

// Phase returns the phase a phase anchor names.
func (a Anchor) Phase() (string, bool) {
	kind, name, ok := strings.Cut(string(a), ":")
	return name, ok && kind == anchorKindPhase
}

// OrDefault is the anchor, or AnchorInject when it is unset.
func (a Anchor) OrDefault() Anchor {
	if a == "" {
		return AnchorInject
	}
	return a
}

// anchor checks that a names a moment before the step at path.
func (v *validator) anchor(path string, a Anchor) {
	kind, name, hasName := strings.Cut(string(a), ":")
	switch {
	case a == "" || a == AnchorStart:
	case kind == anchorKindInject && !hasName:
		if len(v.injects) == 0 {
			v.errf(path, "anchor %q: no inject step before this one", a)
		}
	case kind == anchorKindInject && !v.injects[name]:
		v.errf(path, "anchor %q: no inject step %q before this one; inject steps so far: %s", a, name, list(v.injects))
	case kind == anchorKindUndo && !v.undos[name]:
		v.errf(path, "anchor %q: no undo step %q before this one; undo steps so far: %s", a, name, list(v.undos))
	case kind == anchorKindPhase && !v.phases[name]:
		v.errf(path, "anchor %q: no phase %q before this one; phases so far: %s", a, name, list(v.phases))
	case kind != anchorKindInject && kind != anchorKindUndo && kind != anchorKindPhase:
		v.errf(path, "anchor %q: expected start, inject, inject:<step>, undo:<step> or phase:<name>", a)
	}
}
