package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// resolveTargets resolves every target once, before any fault, so every
// step acts on the same objects and the pick is recorded; a target
// resolved after a step waits for it (resolveTargetsAfter).
func (r *run) resolveTargets(ctx context.Context) error {
	// One seed for every random pick the scenario does not seed itself,
	// drawn once, so that --seed with it replays the whole run's picks.
	r.seed = r.in.Seed
	if r.seed == nil {
		s := drawSeed()
		r.seed = &s
	}
	return r.resolveTargetsAfter(ctx, "")
}

// resolveTargetsAfter resolves the targets whose spec.targets[].after
// names step ("" for those resolved before the first step).
func (r *run) resolveTargetsAfter(ctx context.Context, step string) error {
	for i, t := range r.in.Scenario.Spec.Targets {
		if t.After != step {
			continue
		}
		if err := r.resolveTarget(ctx, i, t); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) resolveTarget(ctx context.Context, i int, t scenario.Target) error {
	all, err := r.in.Provider.Resolve(ctx, t.Select)
	if err != nil {
		return &providers.InfraError{Err: fmt.Errorf("resolve target %s: %w", t.Name, err)}
	}
	if len(all) == 0 {
		return fmt.Errorf("resolve target %s: no object matches the selector (%s, spec.targets[%d].select): %w", t.Name, r.in.Scenario.Where(fmt.Sprintf("spec.targets[%d].select", i)), i, providers.ErrNotFound)
	}
	all = r.excluding(all, t.Exclude)
	if len(all) == 0 {
		return fmt.Errorf("resolve target %s: every match belongs to an excluded target (%s): %w", t.Name, strings.Join(t.Exclude, ", "), providers.ErrNotFound)
	}
	if t.Count > len(all) {
		return fmt.Errorf("resolve target %s: count is %d (%s), but the selector matches %d object(s)%s; a count is how many to pick, not an upper bound", t.Name, t.Count, r.in.Scenario.Where(fmt.Sprintf("spec.targets[%d].count", i)), len(all), excludedNote(t.Exclude))
	}
	picked, seed := pick(all, t, r.seed)
	r.objects[t.Name] = picked
	r.res.Run.addClusters(picked)
	if seed != nil && t.Random.Seed == nil {
		r.res.Run.Seed = seed
	}
	tr := TargetResult{Name: t.Name, Seed: seed, After: t.After}
	for _, o := range picked {
		tr.Objects = append(tr.Objects, o.String())
	}
	r.res.Targets = append(r.res.Targets, tr)
	details := map[string]string{"objects": strings.Join(tr.Objects, ","), "matched": fmt.Sprint(len(all))}
	if seed != nil {
		details["seed"] = fmt.Sprint(*seed)
	}
	if t.After != "" {
		details["after"] = t.After
	}
	r.tl.Record("runner", "target/"+t.Name, "target-resolved", details)
	return nil
}

func excludedNote(excluded []string) string {
	if len(excluded) == 0 {
		return ""
	}
	return " once those of " + strings.Join(excluded, ", ") + " are excluded"
}

// excluding drops the objects of the named, already resolved targets.
func (r *run) excluding(all []providers.Object, targets []string) []providers.Object {
	taken := map[string]bool{}
	for _, t := range targets {
		for _, o := range r.objects[t] {
			taken[o.ID] = true
		}
	}
	out := all[:0:0]
	for _, o := range all {
		if !taken[o.ID] {
			out = append(out, o)
		}
	}
	return out
}

// pick chooses a target's objects from all matches (sorted by name): the
// first ones, or a seeded random sample: the target's own seed, else
// runSeed. The seed is returned for replay.
func pick(all []providers.Object, t scenario.Target, runSeed *int64) ([]providers.Object, *int64) {
	sorted := append([]providers.Object(nil), all...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	n := len(sorted)
	switch {
	case t.Count > 0:
		n = min(t.Count, n)
	case t.Percent > 0:
		n = max(1, (len(sorted)*t.Percent+99)/100)
	}
	if t.Random == nil {
		return sorted[:n], nil
	}
	var seed int64
	switch {
	case t.Random.Seed != nil:
		seed = *t.Random.Seed
	default:
		seed = *runSeed
	}
	rng := mrand.New(mrand.NewPCG(uint64(seed), 0))
	rng.Shuffle(len(sorted), func(i, j int) { sorted[i], sorted[j] = sorted[j], sorted[i] })
	out := sorted[:n]
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, &seed
}

func drawSeed() int64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return time.Now().UnixNano() // crypto/rand does not fail on Linux; a clock seed is still replayable
	}
	return int64(binary.LittleEndian.Uint64(b[:]) >> 1)
}
