package management

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// handover is the lab's client of the management cluster on the compiled
// stack: the in-process manager's client until an upgrade stops that
// manager, then the cache of the lab's own that a stack of processes
// uses (startClient). The lab's parts keep the client they were given at
// start, so the client they hold has to outlive the manager.
type handover struct {
	mu sync.RWMutex
	c  client.Client
}

func (h *handover) set(c client.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.c = c
}

func (h *handover) get() client.Client {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.c
}

func (h *handover) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return h.get().Get(ctx, key, obj, opts...)
}

func (h *handover) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return h.get().List(ctx, list, opts...)
}

func (h *handover) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return h.get().Apply(ctx, obj, opts...)
}

func (h *handover) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return h.get().Create(ctx, obj, opts...)
}

func (h *handover) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return h.get().Delete(ctx, obj, opts...)
}

func (h *handover) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return h.get().Update(ctx, obj, opts...)
}

func (h *handover) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return h.get().Patch(ctx, obj, patch, opts...)
}

func (h *handover) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return h.get().DeleteAllOf(ctx, obj, opts...)
}

func (h *handover) Status() client.SubResourceWriter { return h.get().Status() }

func (h *handover) SubResource(sub string) client.SubResourceClient {
	return h.get().SubResource(sub)
}

func (h *handover) Scheme() *runtime.Scheme { return h.get().Scheme() }

func (h *handover) RESTMapper() meta.RESTMapper { return h.get().RESTMapper() }

func (h *handover) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return h.get().GroupVersionKindFor(obj)
}

func (h *handover) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	return h.get().IsObjectNamespaced(obj)
}
