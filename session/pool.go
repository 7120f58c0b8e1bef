package session

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
)

// Pool gives each scenario of a run of several on the lab (the CLI's run
// of several, a suite) the session it runs on. It keeps one warm lab whose
// management plane, controllers and vcsim stay up: a scenario its first
// cluster serves runs there while no scenario has changed it (a cluster of
// real nodes serves again and again); any other scenario of simulated
// nodes gets a fresh cluster on it (lab.Lab.Renew), prepared during the
// scenario before it when asked (Prepare). A scenario labelled
// scenario.LabelOwnCluster, or of real nodes the first cluster does not
// serve, gets a lab of its own; one with no spec.lab a vCenter simulator.
// Scenarios reach Acquire adjusted (Adjust): on the nodes the run chose.
type Pool struct {
	// Open opens a lab of the clusters (none: a vCenter simulator alone)
	// which prepares clusters of the spares' shapes as it starts, and
	// waits for their Machines.
	Open func(ctx context.Context, spares []scenario.LabSpec, clusters ...lab.ClusterSpec) (*Session, error)
	// Spares are the shapes of the clusters the warm lab prepares as it
	// starts: those of the scenarios that lease one beside the first.
	Spares []scenario.LabSpec
	// Out, when set, receives a line for people per cluster made.
	Out io.Writer

	// mu guards warm, first and used for Lease.
	mu   sync.Mutex
	warm *Session
	// first is the shape of the warm lab's first cluster; used says a
	// scenario changed it (one of simulated nodes ran there, or Renew
	// removed it).
	first scenario.LabSpec
	used  bool
	// leaseErr is why the warm lab did not start for a Lease: the
	// scenarios beside it waited for that start, and it is not tried
	// again for each.
	leaseErr error
}

// Warm is the warm lab's session, nil before the first.
func (p *Pool) Warm() *Session { return p.warm }

// Lab is the warm lab, nil before the first.
func (p *Pool) Lab() *lab.Lab {
	if p.warm == nil {
		return nil
	}
	return p.warm.Lab
}

// Start opens the warm lab with a first cluster of shape first.
func (p *Pool) Start(ctx context.Context, first scenario.LabSpec) error {
	s, err := p.Open(ctx, p.Spares, lab.SpecFor(lab.ClusterName, first))
	if err != nil {
		return err
	}
	p.warm, p.first, p.used = s, first, false
	return nil
}

// Acquire is the session sc runs on and how to release it (a warm lab's
// is kept).
func (p *Pool) Acquire(ctx context.Context, sc *scenario.Scenario) (*Session, func(context.Context) error, error) {
	keep := func(context.Context) error { return nil }
	l := sc.Spec.Lab
	switch {
	case len(LabClusters(sc)) == 0, sc.OwnCluster(), UpgradesManagement(sc):
		// With no cluster to start (no spec.lab, or one the engine skips:
		// simulated only, on real nodes) a vCenter simulator alone, which
		// has no simulated nodes whatever the warm lab has. A scenario
		// that upgrades the management plane leaves it on another
		// release: it gets a lab of its own.
		return p.own(ctx, LabClusters(sc)...)
	case p.warm != nil && !p.first.Release.SameStack(l.Release):
		// A lab runs one stack: the next scenarios are likely on this
		// one too, so it becomes the warm lab.
		p.say("lab: %s runs on release %s, the warm lab on %s; starting a lab of that release\n", sc.Metadata.Name, releaseName(l.Release), releaseName(p.first.Release))
		if err := p.Close(ctx); err != nil {
			p.say("lab: stop: %v\n", err)
		}
		fallthrough
	case p.warm == nil:
		if err := p.Start(ctx, *l); err != nil {
			return nil, nil, err
		}
		p.used = !l.RealNodes()
		return p.warm, keep, p.scope(sc, lab.SpecFor(lab.ClusterName, *l))
	case p.firstServes(*l):
		p.used = !l.RealNodes()
		return p.warm, keep, p.scope(sc, lab.SpecFor(lab.ClusterName, p.first))
	case l.RealNodes():
		return p.own(ctx, lab.SpecFor(lab.ClusterName, *l))
	}
	spec, prepared := p.warm.Lab.NextSpec(lab.ClusterName, *l)
	if prepared {
		p.say("lab: cluster %s (%s), prepared during the last scenario; the last one goes\n", spec.Key(), spec.Shape())
	} else {
		p.say("lab: new cluster %s (%s) on the warm lab; the last one goes\n", spec.Key(), spec.Shape())
	}
	began := time.Now()
	p.used = true
	err := p.warm.Lab.Renew(ctx, spec)
	if err == nil {
		p.say("lab: cluster %s Running in %s\n", spec.Key(), time.Since(began).Round(100*time.Millisecond))
		return p.warm, keep, p.scope(sc, spec)
	}
	// A lab that cannot renew is not trusted with the next scenario
	// either: a cold one replaces it.
	p.say("lab: the warm lab could not make a fresh cluster (%v); starting a new lab\n", err)
	if cerr := p.Close(ctx); cerr != nil {
		p.say("lab: stop: %v\n", cerr)
	}
	if err := p.Start(ctx, *l); err != nil {
		return nil, nil, err
	}
	p.used = true
	return p.warm, keep, p.scope(sc, lab.SpecFor(lab.ClusterName, *l))
}

// Prepare has the warm lab start the cluster Acquire will give next, the
// scenario run after the current one, while the current one runs. It does
// nothing where next would not get a fresh cluster; one it could not
// start is made by Acquire.
func (p *Pool) Prepare(ctx context.Context, next *scenario.Scenario) {
	if p.warm == nil || next == nil || freshClusterRefused(next) != "" || p.firstServes(*next.Spec.Lab) ||
		!p.first.Release.SameStack(next.Spec.Lab.Release) || placedOnHosts(*next.Spec.Lab) {
		return
	}
	if spec, err := p.warm.Lab.PrepareNext(ctx, lab.ClusterName, *next.Spec.Lab); err != nil {
		p.say("lab: could not prepare the next scenario's cluster, %s (%v); it is made when that scenario starts\n", spec.Key(), err)
	}
}

// PrepareLease has the warm lab start a cluster for sc, which is to
// Lease one soon (run --parallel: the next scenario waiting for a slot),
// so that its Lease finds it coming up. It waits for a start of the warm
// lab under way, and does nothing without one, or where sc leases no
// cluster of it; a cluster it could not start is made by Lease.
func (p *Pool) PrepareLease(ctx context.Context, sc *scenario.Scenario) {
	p.mu.Lock()
	warm, first := p.warm, p.first
	p.mu.Unlock()
	if warm == nil || Place(sc, ProviderLab).Where != Leased || !first.Release.SameStack(sc.Spec.Lab.Release) || placedOnHosts(*sc.Spec.Lab) {
		return
	}
	spec := warm.Lab.FreshSpec(lab.ClusterName, *sc.Spec.Lab)
	if err := warm.Lab.Prepare(ctx, spec); err != nil {
		p.say("lab: could not prepare %s's cluster, %s (%v); it is made when that scenario starts\n", sc.Metadata.Name, spec.Key(), err)
	}
}

// placedOnHosts tells whether a cluster of shape l has its VMs placed on
// the lab's hosts as spec.lab.placement says: it is made when its scenario
// starts, with every host up, not ahead beside a scenario that fails or
// maintains a host (its VMs would be placed around that host).
func placedOnHosts(l scenario.LabSpec) bool {
	return l.Placement != (scenario.LabSpec{}).Placement
}

// Close stops the warm lab.
func (p *Pool) Close(ctx context.Context) error {
	if p.warm == nil {
		return nil
	}
	err := p.warm.Close(ctx)
	p.warm = nil
	return err
}

// UpgradesManagement tells whether sc upgrades the management plane
// (engine.FaultUpgradeManagement), which leaves its lab on another
// release.
func UpgradesManagement(sc *scenario.Scenario) bool {
	for _, st := range sc.Spec.Steps {
		if st.Inject != nil && st.Inject.Fault == engine.FaultUpgradeManagement {
			return true
		}
	}
	return false
}

// releaseName names the stack r resolves to for people.
func releaseName(r lab.Release) string {
	if s, err := r.Resolve(); err == nil {
		return s.Name
	}
	return r.String()
}

// firstServes tells whether a scenario of shape s runs on the warm lab's
// first cluster: no scenario changed it, and it serves s.
func (p *Pool) firstServes(s scenario.LabSpec) bool {
	return !p.used && lab.SpecFor(lab.ClusterName, p.first).Serves(s)
}

func (p *Pool) own(ctx context.Context, clusters ...lab.ClusterSpec) (*Session, func(context.Context) error, error) {
	s, err := p.Open(ctx, nil, clusters...)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// scope keeps sc's targets in the warm lab's cluster spec.
func (p *Pool) scope(sc *scenario.Scenario, spec lab.ClusterSpec) error {
	if err := Adjust(sc, Adjustments{Scope: spec.Key()}); err != nil {
		return fmt.Errorf("scope to the lab's cluster: %w", err)
	}
	return nil
}

func (p *Pool) say(format string, args ...any) {
	if p.Out != nil {
		fmt.Fprintf(p.Out, format, args...)
	}
}

// LabClusters are the clusters a lab of its own starts for sc: its
// spec.lab's, or none (a vCenter simulator alone) when it has none or
// cannot run on the nodes it asks for (the engine skips it).
func LabClusters(sc *scenario.Scenario) []lab.ClusterSpec {
	l := sc.Spec.Lab
	if l == nil || (l.RealNodes() && l.SimulatedOnly != "") {
		return nil
	}
	return []lab.ClusterSpec{lab.SpecFor(lab.ClusterName, *l)}
}
