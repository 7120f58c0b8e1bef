package session

import (
	"fmt"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
)

// NotServedError is a scenario a served lab does not run, and why.
type NotServedError struct{ Why string }

func (e *NotServedError) Error() string { return "the lab does not run it: " + e.Why }

// adopt adjusts sc as req says and places it on the lab: a scenario that
// names no release runs on the lab's; one that names another (or whose
// run's --release does), or that needs a lab of its own, is
// NotServedError, saying why.
func (s *Server) adopt(sc *scenario.Scenario, req RunRequest) error {
	adjust := Adjustments{Timeout: req.Timeout}
	if req.Release != "" {
		adjust.Release = lab.ParseRelease(req.Release)
	}
	if err := Adjust(sc, adjust); err != nil {
		return err
	}
	if pl := Place(sc, ProviderLab); pl.Where != Leased {
		return &NotServedError{Why: pl.Why}
	}
	s.pool.mu.Lock()
	first := s.pool.first.Release
	s.pool.mu.Unlock()
	switch {
	case sc.Spec.Lab.Release.IsZero():
		// Named as the lab names it: the clusters it keeps ready are
		// of that shape (NewServer).
		sc.Spec.Lab.Release = first
	case !first.SameStack(sc.Spec.Lab.Release):
		return &NotServedError{Why: fmt.Sprintf("its release %s is not the lab's, %s", releaseName(sc.Spec.Lab.Release), releaseName(first))}
	}
	return nil
}
