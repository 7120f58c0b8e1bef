package capi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
)

var _ providers.SharedLeases = (*Provider)(nil)

// AcquireLease implements providers.SharedLeases with a
// coordination.k8s.io/v1 Lease in the Machine's namespace of the
// management cluster, named after the Machine: every runner that reaches
// the cluster (another CI runner, a CronJob in the cluster) sees it, as
// leader election's leases are seen. The holder renews it every third of
// its duration; a runner killed stops renewing, and once the duration has
// passed another may take it over.
func (p *Provider) AcquireLease(ctx context.Context, obj providers.Object, holder string, duration time.Duration) (func(context.Context) error, error) {
	key, err := leaseKey(obj)
	if err != nil {
		return nil, err
	}
	c := p.c
	lease, err := takeLease(ctx, c, key, obj, holder, duration)
	if err != nil {
		return nil, err
	}
	return providers.RenewUntilReleased(ctx,
		func(ctx context.Context) {
			renewLease(ctx, c, lease, duration, p.log.WithValues("lease", key.String()))
		},
		func(ctx context.Context) error { return releaseLease(ctx, c, key, holder) }), nil
}

// leaseKey is the Lease of obj: faultline-machine-NAME in its namespace.
func leaseKey(obj providers.Object) (client.ObjectKey, error) {
	ns := obj.Attributes[providers.AttrNamespace]
	if obj.Kind != "Machine" || ns == "" {
		return client.ObjectKey{}, fmt.Errorf("lease of %s: not a Cluster API Machine: %w", obj, providers.ErrUnsupported)
	}
	name := "faultline-machine-" + obj.Name
	if len(name) > 253 {
		name = name[:253]
	}
	return client.ObjectKey{Namespace: ns, Name: strings.TrimRight(name, "-.")}, nil
}

// takeLease creates the Lease, or takes over one whose holder let it
// expire; a Lease renewed within its duration by another holder is
// providers.ErrLeaseHeld. A write that loses a race to another runner
// reads as held, never as taken.
func takeLease(ctx context.Context, c client.Client, key client.ObjectKey, obj providers.Object, holder string, duration time.Duration) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(max(1, duration/time.Second))),
		AcquireTime: &now, RenewTime: &now,
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "faultline"}}, Spec: spec}
	err := leaseClient{c}.create(ctx, lease)
	if err == nil {
		return lease, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Lease %s for %s: %w", key, obj, err)
	}
	held := &coordinationv1.Lease{}
	if err := (leaseClient{c}).get(ctx, key, held); err != nil {
		return nil, fmt.Errorf("read Lease %s for %s: %w", key, obj, err)
	}
	if until, ok := leaseLive(held); ok && ptr.Deref(held.Spec.HolderIdentity, "") != holder {
		return nil, fmt.Errorf("%s is held by %s until %s (Lease %s, which expires unless renewed): %w", obj, ptr.Deref(held.Spec.HolderIdentity, "an unnamed holder"), until.Format(time.RFC3339), key, providers.ErrLeaseHeld)
	}
	// Expired, or ours: taken over, on the version read.
	held.Spec = spec
	if err := (leaseClient{c}).update(ctx, held); apierrors.IsConflict(err) {
		return nil, fmt.Errorf("%s: another runner took Lease %s first: %w", obj, key, providers.ErrLeaseHeld)
	} else if err != nil {
		return nil, fmt.Errorf("take over Lease %s for %s: %w", key, obj, err)
	}
	return held, nil
}

// leaseLive tells whether l was renewed within its duration, and until
// when it holds.
func leaseLive(l *coordinationv1.Lease) (time.Time, bool) {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}, false
	}
	until := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	return until, time.Now().Before(until)
}

// renewLease renews l every third of duration until ctx ends. A renewal
// that fails is tried again at the next tick: the lease holds for its
// duration from the last one that succeeded.
func renewLease(ctx context.Context, c client.Client, l *coordinationv1.Lease, duration time.Duration, log logr.Logger) {
	tick := time.NewTicker(max(duration/3, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		if err := (leaseClient{c}).update(ctx, l); err != nil && ctx.Err() == nil {
			log.Error(err, "renewing the target's Lease")
		}
	}
}

// releaseLease deletes the Lease if holder still holds it.
func releaseLease(ctx context.Context, c client.Client, key client.ObjectKey, holder string) error {
	l := &coordinationv1.Lease{}
	if err := (leaseClient{c}).get(ctx, key, l); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read Lease %s: %w", key, err)
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != holder {
		return nil // taken over after it expired: no longer ours to delete
	}
	err := leaseClient{c}.delete(ctx, l)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Lease %s: %w", key, err)
	}
	return nil
}

// leaseClient reads and writes Leases as unstructured objects, so that a
// client whose scheme lacks coordination.k8s.io (a caller's own, narrow
// one) leases too.
type leaseClient struct{ c client.Client }

func toUnstructured(l *coordinationv1.Lease) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(coordinationv1.SchemeGroupVersion.WithKind("Lease"))
	return u, nil
}

// write runs a write of l as an unstructured object and reads back what
// the API server answered (its resourceVersion) into l.
func (lc leaseClient) write(l *coordinationv1.Lease, w func(*unstructured.Unstructured) error) error {
	u, err := toUnstructured(l)
	if err != nil {
		return err
	}
	if err := w(u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, l)
}

func (lc leaseClient) create(ctx context.Context, l *coordinationv1.Lease) error {
	return lc.write(l, func(u *unstructured.Unstructured) error { return lc.c.Create(ctx, u) })
}

func (lc leaseClient) update(ctx context.Context, l *coordinationv1.Lease) error {
	return lc.write(l, func(u *unstructured.Unstructured) error { return lc.c.Update(ctx, u) })
}

func (lc leaseClient) get(ctx context.Context, key client.ObjectKey, l *coordinationv1.Lease) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(coordinationv1.SchemeGroupVersion.WithKind("Lease"))
	if err := lc.c.Get(ctx, key, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, l)
}

// delete deletes l if it is still the object read (UID and version).
func (lc leaseClient) delete(ctx context.Context, l *coordinationv1.Lease) error {
	u, err := toUnstructured(l)
	if err != nil {
		return err
	}
	return lc.c.Delete(ctx, u, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
}
