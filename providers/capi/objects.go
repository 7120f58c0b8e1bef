package capi

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
)

// ObjectStore implements providers.Objects and providers.ObjectWriter over
// the clients Cluster returns. Provider has one over the management cluster
// and the Machines' workload clusters; the kind provider one over its
// cluster.
type ObjectStore struct {
	// Cluster returns the client of cluster ("management" or "workload")
	// for scope, and how long one call may take (0: as long as ctx).
	Cluster func(ctx context.Context, scope providers.Object, cluster string) (client.Client, time.Duration, error)
}

var (
	_ providers.Objects      = ObjectStore{}
	_ providers.ObjectWriter = ObjectStore{}
)

// client is the client of cluster with ctx bounded by its timeout.
func (s ObjectStore) client(ctx context.Context, scope providers.Object, cluster string) (client.Client, context.Context, context.CancelFunc, error) {
	c, timeout, err := s.Cluster(ctx, scope, cluster)
	if err != nil {
		return nil, nil, nil, err
	}
	if timeout <= 0 {
		return c, ctx, func() {}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return c, ctx, cancel, nil
}

// GetObject implements providers.Objects.
func (s ObjectStore) GetObject(ctx context.Context, scope providers.Object, ref providers.ObjectRef) (map[string]any, error) {
	c, ctx, cancel, err := s.client(ctx, scope, ref.Cluster)
	if err != nil {
		return nil, err
	}
	defer cancel()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	return u.Object, nil
}

// ListObjects implements providers.Objects.
func (s ObjectStore) ListObjects(ctx context.Context, scope providers.Object, ref providers.ObjectRef) ([]map[string]any, error) {
	c, ctx, cancel, err := s.client(ctx, scope, ref.Cluster)
	if err != nil {
		return nil, err
	}
	defer cancel()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(ref.APIVersion)
	list.SetKind(ref.Kind + "List")
	var opts []client.ListOption
	if ref.Namespace != "" {
		opts = append(opts, client.InNamespace(ref.Namespace))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			// The cluster does not serve the kind (Calico's, without Calico).
			return nil, fmt.Errorf("list %s: %v: %w", ref.Kind, err, providers.ErrNotFound)
		}
		return nil, fmt.Errorf("list %s: %w", ref.Kind, err)
	}
	out := make([]map[string]any, len(list.Items))
	for i := range list.Items {
		out[i] = list.Items[i].Object
	}
	return out, nil
}

// ApplyObject implements providers.ObjectWriter: create, or replace the
// object of that name. A controller may write the object between the read
// and the replace (Cluster API's status updates of a MachineHealthCheck):
// on a conflict it reads and replaces again, as kubectl replace would be
// retried.
func (s ObjectStore) ApplyObject(ctx context.Context, scope providers.Object, cluster string, obj map[string]any) error {
	c, ctx, cancel, err := s.client(ctx, scope, cluster)
	if err != nil {
		return err
	}
	defer cancel()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(u.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(u), existing)
		switch {
		case apierrors.IsNotFound(err):
			return c.Create(ctx, u)
		case err != nil:
			return err
		}
		u.SetResourceVersion(existing.GetResourceVersion())
		return c.Update(ctx, u)
	})
}

// dryRunTimeout bounds a dry-run create, which waits for the webhooks it
// calls: the longest timeout a webhook may have is 30s.
const dryRunTimeout = 35 * time.Second

// DryRunCreate implements providers.ObjectWriter.
func (s ObjectStore) DryRunCreate(ctx context.Context, scope providers.Object, cluster string, obj map[string]any) error {
	c, _, err := s.Cluster(ctx, scope, cluster)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, dryRunTimeout)
	defer cancel()
	return c.Create(ctx, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}, client.DryRunAll)
}

// DeleteObject implements providers.ObjectWriter.
func (s ObjectStore) DeleteObject(ctx context.Context, scope providers.Object, ref providers.ObjectRef) error {
	c, ctx, cancel, err := s.client(ctx, scope, ref.Cluster)
	if err != nil {
		return err
	}
	defer cancel()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	u.SetNamespace(ref.Namespace)
	u.SetName(ref.Name)
	if err := c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", ref, err)
	}
	return nil
}
