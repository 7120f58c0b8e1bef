package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab"
)

// LabelAlone is the label by which a scenario says it must run alone: a
// run of several (run --parallel) runs it after the others, never beside
// them, as it does a scenario no leased cluster serves (Leasable).
const LabelAlone = "alone"

// Leasable says why sc cannot run on a cluster leased from a warm lab
// beside other scenarios, "" when it can. A scenario that cannot runs
// alone, on a lab of its own (or the warm lab, one scenario at a time).
func Leasable(sc *scenario.Scenario) string {
	if sc.Metadata.Labels[LabelAlone] == "true" {
		return "it is labelled " + LabelAlone + `: "true"`
	}
	return freshClusterRefused(sc)
}

// OwnLab says why sc, which no leased cluster serves, runs beside the
// leased ones (run --parallel) on a lab of its own, "" when it does not:
// it leases a cluster, says it must run alone (LabelAlone), or has real
// nodes, which a lab brings up for one cluster at a time and which are
// not started beside other labs. A lab of its own shares nothing with
// the warm lab but the machine: its management plane, vCenter simulator
// and journal are its own, on any release.
func OwnLab(sc *scenario.Scenario) string {
	if sc.Metadata.Labels[LabelAlone] == "true" || (len(LabClusters(sc)) > 0 && sc.Spec.Lab.RealNodes()) {
		return ""
	}
	return freshClusterRefused(sc)
}

// Unbuilt says why sc's lab cannot start beside other runs yet, "" when
// it can: its stack's managers are not built, and their build (minutes on
// two cores) would share the machine with the runs beside it and outlast
// its set-up deadline. Run alone, the build has the machine to itself.
func Unbuilt(sc *scenario.Scenario) string {
	if sc.Spec.Lab == nil {
		return ""
	}
	stack, err := sc.Spec.Lab.Release.Resolve()
	if err != nil {
		return ""
	}
	if built, err := lab.StackBuilt(stack); err == nil && !built {
		return fmt.Sprintf("its stack %s is not built yet, and its build would share the machine with the runs beside it", stack.Name)
	}
	return ""
}

// LabSkips is why the lab would skip sc as its engine does, the reason
// its result gives, when sc runs on simulated nodes and requires what they
// lack (workloads: the simulated tier runs no pods); "" when it would run
// it. It is known before a lab or cluster is started for sc.
func LabSkips(sc *scenario.Scenario) string {
	if len(LabClusters(sc)) == 0 || sc.Spec.Lab.RealNodes() {
		return ""
	}
	for _, c := range sc.Requirements() {
		if err := lab.SimulatedUnavailable(c); err != nil {
			return providers.Lacks(ProviderLab, c, err).Error()
		}
	}
	return ""
}

// freshClusterRefused says why a fresh simulated cluster of a warm lab
// cannot serve sc, "" when it can.
func freshClusterRefused(sc *scenario.Scenario) string {
	l := sc.Spec.Lab
	switch {
	case len(LabClusters(sc)) == 0:
		return "it has no spec.lab (a vCenter simulator alone)"
	case sc.OwnCluster():
		return "it is labelled " + scenario.LabelOwnCluster
	case UpgradesManagement(sc):
		return "it upgrades the management plane every cluster of a lab shares"
	case l.RealNodes():
		return "its nodes are real, and a lab runs real nodes for one cluster"
	}
	return ""
}

// Lease is a session for sc on a fresh cluster of the warm lab, beside
// the clusters other scenarios lease at the same time, and how to give it
// back (the cluster is removed). The first Lease starts the warm lab with
// sc's shape, and its first cluster serves that lease; the others wait for
// it. sc must be Leasable and on the warm lab's release. Lease is safe for
// concurrent use; Acquire is not, and is not to be called beside it.
func (p *Pool) Lease(ctx context.Context, sc *scenario.Scenario) (*Session, func(context.Context) error, error) {
	return p.lease(ctx, sc, p.Out)
}

// lease is Lease saying to out (when set) which cluster sc leased.
func (p *Pool) lease(ctx context.Context, sc *scenario.Scenario, out io.Writer) (*Session, func(context.Context) error, error) {
	if why := Leasable(sc); why != "" {
		return nil, nil, fmt.Errorf("%s cannot lease a cluster of the warm lab: %s", sc.Metadata.Name, why)
	}
	shape := *sc.Spec.Lab
	p.mu.Lock()
	if p.warm == nil && p.leaseErr != nil {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("the warm lab did not start, and is not started again for each scenario beside it: %w", p.leaseErr)
	}
	if p.warm == nil {
		if err := p.Start(ctx, shape); err != nil {
			p.leaseErr = err
			p.mu.Unlock()
			return nil, nil, err
		}
	}
	warm := p.warm
	if !p.first.Release.SameStack(shape.Release) {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("%s runs on release %s, the warm lab on %s: it runs alone", sc.Metadata.Name, releaseName(shape.Release), releaseName(p.first.Release))
	}
	first := p.firstServes(shape)
	p.used = true
	spec := lab.SpecFor(lab.ClusterName, p.first)
	p.mu.Unlock()
	if !first {
		began := time.Now()
		var err error
		if spec, err = warm.Lab.Lease(ctx, lab.ClusterName, shape); err != nil {
			return nil, nil, err
		}
		if out != nil {
			fmt.Fprintf(out, "lab: %s leased cluster %s (%s), Running in %s\n", sc.Metadata.Name, spec.Key(), spec.Shape(), time.Since(began).Round(100*time.Millisecond))
		}
	}
	give := func(ctx context.Context) error { return warm.Lab.Return(ctx, spec.Key()) }
	if err := p.scope(sc, spec); err != nil {
		return nil, nil, errors.Join(err, give(context.WithoutCancel(ctx)))
	}
	return warm, give, nil
}
