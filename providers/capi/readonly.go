package capi

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrReadOnly is what every write through a read-only provider returns.
var ErrReadOnly = errors.New("refused: this provider is read-only")

// WithReadOnly makes every client the provider uses, the management
// cluster's and the workload clusters', refuse writes: faultline check
// must never change a cluster, whatever a check does by mistake.
func WithReadOnly() Option {
	return func(p *Provider) {
		p.readOnly = true
		p.c = readOnlyClient{p.c}
	}
}

// readOnlyClient passes reads and refuses every write verb.
type readOnlyClient struct{ client.Client }

func refuse(verb string, obj runtime.Object) error {
	return fmt.Errorf("%s %T: %w", verb, obj, ErrReadOnly)
}

func (readOnlyClient) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	return refuse("create", obj)
}

func (readOnlyClient) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	return refuse("update", obj)
}

func (readOnlyClient) Patch(_ context.Context, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
	return refuse("patch", obj)
}

func (readOnlyClient) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
	return fmt.Errorf("apply %T: %w", obj, ErrReadOnly)
}

func (readOnlyClient) Delete(_ context.Context, obj client.Object, _ ...client.DeleteOption) error {
	return refuse("delete", obj)
}

func (readOnlyClient) DeleteAllOf(_ context.Context, obj client.Object, _ ...client.DeleteAllOfOption) error {
	return refuse("delete all of", obj)
}

func (readOnlyClient) Status() client.SubResourceWriter { return readOnlySubResource{} }

func (c readOnlyClient) SubResource(string) client.SubResourceClient { return readOnlySubResource{} }

// readOnlySubResource refuses status and other subresource writes, and
// reads of subresources too (none is needed to check).
type readOnlySubResource struct{}

func (readOnlySubResource) Get(_ context.Context, obj, _ client.Object, _ ...client.SubResourceGetOption) error {
	return refuse("get subresource of", obj)
}

func (readOnlySubResource) Create(_ context.Context, obj, _ client.Object, _ ...client.SubResourceCreateOption) error {
	return refuse("create subresource of", obj)
}

func (readOnlySubResource) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	return refuse("update status of", obj)
}

func (readOnlySubResource) Patch(_ context.Context, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
	return refuse("patch status of", obj)
}

func (readOnlySubResource) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
	return fmt.Errorf("apply status of %T: %w", obj, ErrReadOnly)
}
