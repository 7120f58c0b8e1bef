package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
)

// Lease is a session for sc on a fresh cluster of the warm lab, beside
// the clusters other scenarios lease at the same time, and how to give it
// back (the cluster is removed). The first Lease starts the warm lab with
// sc's shape, and its first cluster serves that lease; the others wait for
// it. sc must be placed Leased (Place) and on the warm lab's release. Lease is safe for
// concurrent use; Acquire is not, and is not to be called beside it.
func (p *Pool) Lease(ctx context.Context, sc *scenario.Scenario) (*Session, func(context.Context) error, error) {
	return p.lease(ctx, sc, p.Out)
}

// lease is Lease saying to out (when set) which cluster sc leased.
func (p *Pool) lease(ctx context.Context, sc *scenario.Scenario, out io.Writer) (*Session, func(context.Context) error, error) {
	if pl := Place(sc, ProviderLab); pl.Where != Leased {
		return nil, nil, fmt.Errorf("%s cannot lease a cluster of the warm lab: %s", sc.Metadata.Name, pl.Why)
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
