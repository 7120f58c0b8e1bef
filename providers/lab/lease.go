package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// Lease gives a run a fresh simulated cluster of shape s, named name, beside
// the lab's other clusters, which it leaves alone: several runs lease
// clusters of one warm lab at once (run --parallel), each touching only its
// own. The cluster is the one Prepare started for that name and shape when
// there is one, else a new one in a namespace no cluster has had. It
// returns once the cluster's Machines are all Running; Return removes it.
// A cluster that does not come up is removed before Lease returns.
func (l *Lab) Lease(ctx context.Context, name string, s labconfig.LabSpec) (ClusterSpec, error) {
	created, err := l.take(ctx, name, s)
	if err != nil {
		return created.spec, err
	}
	// A creation begun here ends with ctx; a prepared one soon after its
	// objects are made. Either way it ends before a removal, which could
	// otherwise leave some of its objects.
	err = <-created.done
	if err == nil {
		err = l.waitReady(ctx, []ClusterSpec{created.spec}, nil)
	}
	if err != nil {
		return created.spec, errors.Join(fmt.Errorf("lease cluster %s: %w", created.spec.Key(), err), l.Return(context.WithoutCancel(ctx), created.spec.Key()))
	}
	return created.spec, nil
}

// take is the creation a lease of shape s named name gets: a prepared one
// already Running, else the one prepared first, else one begun now.
func (l *Lab) take(ctx context.Context, name string, s labconfig.LabSpec) (creation, error) {
	l.renewMu.Lock()
	defer l.renewMu.Unlock()
	var first string
	for _, key := range slices.Sorted(maps.Keys(l.prepared)) {
		c := l.prepared[key]
		if !c.is(name, s) {
			continue
		}
		if running, _, err := l.ready(ctx, l.Client(), []ClusterSpec{c.spec}); err == nil && running {
			first = key
			break
		}
		if first == "" || l.prepared[first].begun.After(c.begun) {
			first = key
		}
	}
	if first != "" {
		c := l.prepared[first]
		delete(l.prepared, first)
		return c, nil
	}
	spec := l.freshSpec(name, s)
	c, err := l.begin(ctx, spec)
	c.spec = spec
	return c, err
}

// Return removes the cluster of key that Lease gave (or that the lab
// started with), as Renew removes the clusters it replaces: Cluster API
// deletes its Machines, CAPV their VMs, then what is left in its namespace
// goes, and vcsim keeps only the VMs of the clusters left. The lab's other
// clusters are left alone.
func (l *Lab) Return(ctx context.Context, key string) error {
	if cs, ok := l.clusters.Get(key); ok && cs.RealNodes() {
		return fmt.Errorf("return cluster %s: its nodes are real, and the lab runs them until it stops", key)
	}
	return errors.Join(l.removeCluster(ctx, key), l.cleanVCenter(ctx))
}

// Stock prepares clusters of shape s named name until n of them are
// prepared, for runs to Lease without waiting.
func (l *Lab) Stock(ctx context.Context, name string, s labconfig.LabSpec, n int) error {
	l.renewMu.Lock()
	have := 0
	for _, c := range l.prepared {
		if c.is(name, s) {
			have++
		}
	}
	l.renewMu.Unlock()
	for ; have < n; have++ {
		if err := l.Prepare(ctx, l.FreshSpec(name, s)); err != nil {
			return err
		}
	}
	return nil
}

// Stocked is how many of the clusters Stock prepared of shape s named
// name have every Machine Running, of how many prepared.
func (l *Lab) Stocked(ctx context.Context, name string, s labconfig.LabSpec) (running, prepared int, err error) {
	l.renewMu.Lock()
	var specs []ClusterSpec
	for _, c := range l.prepared {
		if c.is(name, s) {
			specs = append(specs, c.spec)
		}
	}
	l.renewMu.Unlock()
	for _, spec := range specs {
		ok, _, err := l.ready(ctx, l.Client(), []ClusterSpec{spec})
		if err != nil {
			return running, len(specs), err
		}
		if ok {
			running++
		}
	}
	return running, len(specs), nil
}
