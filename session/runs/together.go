package runs

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
)

// together are the items that run side by side (Parallel above 1), in the
// order they start: those a leased cluster of the warm lab serves, on the
// release of the first of them, and those on a lab or in a pod of their
// own, which start right after the first: each brings a lab up, and so
// takes longer. Each kind starts longest first, as far as the history
// knows (longestFirst). The others run alone, one after the other; the
// runner says why of each.
func (r *Runner) together(items []*Item, out io.Writer) []*Item {
	var leased, own []*Item
	var first *scenario.LabSpec
	for _, it := range items {
		if it.Result != nil {
			continue
		}
		name := it.Scenario.Metadata.Name
		switch {
		case it.Place.Where == session.Pod:
			// The Job runs them Parallel at a time; each is waited
			// for at once.
			own = append(own, it)
			continue
		case r.Parallel < 2:
			continue
		case it.Place.Where == session.Alone:
			fmt.Fprintf(out, "%s runs alone, after the others: %s\n", name, it.Place.Why)
			continue
		case it.Place.Where == session.OwnLab:
			fmt.Fprintf(out, "%s runs beside the others on a lab of its own: %s\n", name, it.Place.Why)
			own = append(own, it)
			continue
		}
		if first == nil {
			first = it.Scenario.Spec.Lab
		} else if !first.Release.SameStack(it.Scenario.Spec.Lab.Release) {
			it.Place = session.Placement{Where: session.Alone, Why: fmt.Sprintf("its release %s is not the warm lab's, %s", it.Scenario.Spec.Lab.Release, first.Release)}
			fmt.Fprintf(out, "%s runs alone, after the others: %s\n", name, it.Place.Why)
			continue
		}
		leased = append(leased, it)
	}
	leased, own = r.longestFirst(leased, out), r.longestFirst(own, out)
	n := min(1, len(leased))
	return slices.Concat(leased[:n], own, leased[n:])
}

// longestFirst orders items by how long their scenarios' past passing
// runs took (History.Took, on the provider and profile), longest first, so
// that the longest does not start last and end alone; those with no past
// time keep their order, after the others. It says the order it chose.
func (r *Runner) longestFirst(items []*Item, out io.Writer) []*Item {
	if r.History == nil || len(items) < 2 {
		return items
	}
	took := map[*Item]time.Duration{}
	for _, it := range items {
		profile := r.Profile
		if it.Scenario.Spec.Lab == nil {
			profile = "" // a vCenter simulator alone: its results name no profile
		}
		d, ok, err := r.History.Took(it.Scenario.Metadata.Name, r.Provider, profile)
		if err != nil {
			fmt.Fprintf(out, "faultline: %v; the scenarios start in their order\n", err)
			return items
		}
		if ok {
			took[it] = d
		}
	}
	if len(took) == 0 {
		return items
	}
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b *Item) int {
		da, ka := took[a]
		db, kb := took[b]
		switch {
		case ka && !kb:
			return -1
		case kb && !ka:
			return 1
		}
		return cmp.Compare(db, da) // longest first
	})
	var say []string
	for _, it := range sorted {
		if d, ok := took[it]; ok {
			say = append(say, fmt.Sprintf("%s %s", it.Scenario.Metadata.Name, d.Round(time.Second)))
		}
	}
	fmt.Fprintf(out, "longest first, as the history took them: %s\n", strings.Join(say, ", "))
	return sorted
}

// runTogether runs items at most Parallel at a time, each on a cluster
// leased from the warm lab or a lab (or pod) of its own. The first leased
// one runs on the warm lab's first cluster; the clusters of the leased
// ones that start beside it, and of the leaseAhead after them, start with
// the lab, and as each leased one starts the lab prepares the next ones',
// leaseAhead beyond those started: a slot that frees finds a cluster
// coming up. Their progress goes to out as lines that name the scenario.
// Items in pods all wait at once: their Job runs Parallel at a time.
func (r *Runner) runTogether(ctx context.Context, items []*Item, out io.Writer) {
	var leased []*Item
	slots := min(r.Parallel, len(items))
	for _, it := range items {
		switch it.Place.Where {
		case session.Leased:
			leased = append(leased, it)
		case session.Pod:
			slots = len(items)
		}
	}
	prep, _ := r.Executor.(Preparer)
	ready := 0 // leased[:ready] have, or will have, a cluster
	for _, it := range items[:slots] {
		if it.Place.Where == session.Leased {
			ready++
		}
	}
	ready = min(ready+leaseAhead, len(leased))
	if prep != nil && ready > 1 {
		shapes := make([]scenario.LabSpec, 0, ready-1)
		for _, it := range leased[1:ready] {
			shapes = append(shapes, *it.Scenario.Spec.Lab)
		}
		prep.Spares(shapes)
		defer prep.Spares(nil)
	}
	next := make(chan *Item)
	var wg sync.WaitGroup
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range next {
				r.runItem(ctx, it, besideSlot(out, it))
			}
		}()
	}
	started := 0 // leased ones handed to a slot
	for _, it := range items {
		if ctx.Err() != nil {
			break // interrupted: the rest do not start
		}
		select {
		case next <- it:
		case <-ctx.Done():
		}
		if it.Place.Where != session.Leased || prep == nil {
			continue
		}
		for started++; ready < min(started+leaseAhead, len(leased)); ready++ {
			prep.PrepareLease(ctx, leased[ready].Scenario)
		}
	}
	close(next)
	wg.Wait()
}

// leaseAhead is how many leased clusters runTogether keeps coming up
// beyond those of the items running. With one, the lab catalogue with
// --parallel 4 took 406 s on two cores, and 414 s with two: the clusters'
// bring-ups then share the CPU the scenarios and the lab already use up,
// and a slot that frees waits as long.
const leaseAhead = 1

// besideSlot is the slot of it run beside others: its progress as whole
// lines on out, each beginning with its name, and so the lines of a lab
// of its own.
func besideSlot(out io.Writer, it *Item) Slot {
	w := &prefixed{w: out, prefix: it.Scenario.Metadata.Name + ": "}
	sl := Slot{Out: out, Progress: w, Beside: true}
	if it.Place.Where != session.Leased {
		sl.Out = w
	}
	return sl
}
