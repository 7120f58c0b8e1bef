package workloadapi

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lockedClient serialises calls to the in-memory store. Upstream's cache
// hands out the map of an object stored unstructured (written through the
// API) by reference on Get and List, then writes the kind into it, so two
// concurrent reads of such an object are a fatal concurrent map write.
// What it reads unstructured is copied before the lock is released.
type lockedClient struct {
	c  inmemoryclient.Client
	mu *sync.Mutex
}

func (l *lockedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.c.Get(ctx, key, obj); err != nil {
		return err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object = runtime.DeepCopyJSON(u.Object)
	}
	return nil
}

// getConverted reads u and converts it into a typed object under the
// lock: the conversion copies, so the store's map is not copied first (in
// a lab of 20 clusters, the node simulator's reads of Nodes spent a third
// of their time in that copy).
func (l *lockedClient) getConverted(ctx context.Context, key client.ObjectKey, u *unstructured.Unstructured, into client.Object) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.c.Get(ctx, key, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func (l *lockedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.c.List(ctx, list, opts...); err != nil {
		return err
	}
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		for i := range u.Items {
			u.Items[i].Object = runtime.DeepCopyJSON(u.Items[i].Object)
		}
	}
	return nil
}

// snapshot is a copy of o's content taken under the lock: o may be an
// object the store holds (as its informers pass them).
func (l *lockedClient) snapshot(o client.Object) (map[string]any, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u, ok := o.(*unstructured.Unstructured); ok {
		return runtime.DeepCopyJSON(u.Object), nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(o)
}

func (l *lockedClient) Create(ctx context.Context, obj client.Object) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.Create(ctx, obj)
}

func (l *lockedClient) Delete(ctx context.Context, obj client.Object) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.Delete(ctx, obj)
}

func (l *lockedClient) Update(ctx context.Context, obj client.Object) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.Update(ctx, obj)
}

func (l *lockedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.Patch(ctx, obj, patch)
}
