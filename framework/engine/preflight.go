package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// preflight checks, before anything is journaled or applied (and in a dry
// run), that each target object of an inject step leads to what its fault
// acts on (providers.Preflighter): a dry run fails where the real run
// would. The fault's capability is in spec.requires (validation sees to
// it), checked before.
func (r *run) preflight(ctx context.Context, sc *scenario.Scenario) error {
	pf, ok := r.in.Provider.(providers.Preflighter)
	if !ok {
		return nil
	}
	var errs []error
	for _, st := range sc.Spec.Steps {
		if st.Inject == nil {
			continue
		}
		c := faultCatalogue[st.Inject.Fault].capability
		for _, obj := range r.faultObjects(*st.Inject) {
			if err := pf.Preflight(ctx, c, obj); err != nil {
				errs = append(errs, fmt.Errorf("step %s: fault %s on %s: %w", st.Name, st.Inject.Fault, obj, err))
			}
		}
	}
	if len(errs) > 0 {
		return &providers.InfraError{Err: fmt.Errorf("before the first fault: %w", errors.Join(errs...))}
	}
	return nil
}

// faultTargets are the objects sc's inject steps fault, each once.
func (r *run) faultTargets(sc *scenario.Scenario) []providers.Object {
	seen := map[string]bool{}
	var out []providers.Object
	for _, st := range sc.Spec.Steps {
		if st.Inject == nil {
			continue
		}
		for _, o := range r.faultObjects(*st.Inject) {
			if !seen[o.String()] {
				seen[o.String()] = true
				out = append(out, o)
			}
		}
	}
	return out
}
