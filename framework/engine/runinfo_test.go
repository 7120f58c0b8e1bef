package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers/fake"
)

// A run without --seed draws one seed for all its random picks and records
// it: a run given that seed picks the same objects for every target, which
// is what the replay command in result.json relies on.
func TestRunSeedReplays(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, "[VMPower]", "", `
    - name: victim
      select: {vm: "vm-*"}
      count: 1
      random: {}
    - name: bystanders
      select: {vm: "vm-*"}
      count: 2
      random: {}
      exclude: [victim]`, powerCycle)
	var names []string
	for i := range 8 {
		names = append(names, fmt.Sprintf("vm-%d", i))
	}
	picks := func(res *engine.Result) []string {
		var out []string
		for _, tr := range res.Targets {
			out = append(out, tr.Objects...)
		}
		return out
	}
	first, _ := run(t, context.Background(), s, fake.New(names...), func(in *engine.RunInput) { in.DryRun = true })
	if first.Run == nil || first.Run.Seed == nil {
		t.Fatalf("run info %+v: no seed recorded", first.Run)
	}
	for _, tr := range first.Targets {
		if tr.Seed == nil || *tr.Seed != *first.Run.Seed {
			t.Errorf("target %s seed %v, want the run's %d", tr.Name, tr.Seed, *first.Run.Seed)
		}
	}
	again, _ := run(t, context.Background(), s, fake.New(names...), func(in *engine.RunInput) { in.DryRun, in.Seed = true, first.Run.Seed })
	if !slices.Equal(picks(first), picks(again)) {
		t.Errorf("replayed with seed %d: picked %v, first run picked %v", *first.Run.Seed, picks(again), picks(first))
	}
	if !first.Run.DryRun || first.Run.Description != "" {
		t.Errorf("run info %+v: want a dry run with no description", first.Run)
	}
}
