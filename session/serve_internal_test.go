package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/scenarios/selection"
)

// TestServerAdopts: a served lab runs a scenario that names no release on
// its own release; one that names another (or whose run's --release does),
// or that needs a lab of its own, is not served, saying why.
func TestServerAdopts(t *testing.T) {
	other := lab.Stacks()[1].Name
	s := &Server{pool: &Pool{first: scenario.LabSpec{Release: lab.ParseRelease(other)}}}
	load := func(name string) *scenario.Scenario {
		sc, err := selection.Catalogue(name).Load(nil)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	sc := load("power-off-worker")
	if err := s.adopt(sc, RunRequest{}); err != nil || sc.Spec.Lab.Release.Stack != other {
		t.Errorf("no release named: %v, release %v; want the lab's, %s", err, sc.Spec.Lab.Release, other)
	}
	for _, tc := range []struct {
		sc   *scenario.Scenario
		req  RunRequest
		want string
	}{
		{load("power-off-worker"), RunRequest{Release: lab.Stacks()[0].Name}, "is not the lab's"},
		{load("remove-apiserver-pods"), RunRequest{}, "own-cluster"},
	} {
		var ns *NotServedError
		if err := s.adopt(tc.sc, tc.req); !errors.As(err, &ns) || !strings.Contains(ns.Why, tc.want) {
			t.Errorf("%s %+v: %v, want not served: %s", tc.sc.Metadata.Name, tc.req, err, tc.want)
		}
	}
}
