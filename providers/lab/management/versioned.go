package management

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// versionedClient lets the lab keep one vocabulary, the compiled release's
// API versions, against a stack that does not serve them all: an object of
// a version the management cluster does not serve (CAPV v1.15 serves
// infrastructure v1beta1 only) is read and written in the older version
// the cluster serves, through the compiled release's own conversions
// (conversion.Convertible), as a conversion webhook would.
type versionedClient struct {
	client.Client
	// older maps each version the lab uses but the cluster does not
	// serve to the version it serves instead.
	older map[schema.GroupVersion]schema.GroupVersion
}

// newVersionedClient wraps c for the versions cfg's cluster serves; c
// itself when it serves every version of scheme's groups that the lab
// uses.
func newVersionedClient(ctx context.Context, c client.Client, cfg *rest.Config, scheme *runtime.Scheme) (client.Client, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("management cluster discovery: %w", err)
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("management cluster discovery: %w", err)
	}
	served := map[schema.GroupVersion]bool{}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			served[schema.GroupVersion{Group: g.Name, Version: v.Version}] = true
		}
	}
	older := map[schema.GroupVersion]schema.GroupVersion{}
	for _, gv := range scheme.PrioritizedVersionsAllGroups() {
		if gv.Version != "v1beta2" || served[gv] {
			continue
		}
		if old := (schema.GroupVersion{Group: gv.Group, Version: "v1beta1"}); served[old] {
			older[gv] = old
		}
	}
	if len(older) == 0 {
		return c, nil
	}
	return &versionedClient{Client: c, older: older}, nil
}

// served is obj's counterpart in the version the cluster serves; nil when
// obj's own version is served.
func (c *versionedClient) served(obj runtime.Object) (runtime.Object, error) {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return nil, err
	}
	old, ok := c.older[gvk.GroupVersion()]
	if !ok {
		return nil, nil
	}
	return c.Scheme().New(old.WithKind(gvk.Kind))
}

// down converts the lab's obj into spoke, the served version's.
func down(obj, spoke runtime.Object) error {
	hub, ok := obj.(conversion.Hub)
	conv, ok2 := spoke.(conversion.Convertible)
	if !ok || !ok2 {
		return fmt.Errorf("%T has no conversion to %T", obj, spoke)
	}
	return conv.ConvertFrom(hub)
}

// up converts spoke, as the cluster served it, into the lab's obj.
func up(spoke, obj runtime.Object) error {
	hub, ok := obj.(conversion.Hub)
	conv, ok2 := spoke.(conversion.Convertible)
	if !ok || !ok2 {
		return fmt.Errorf("%T has no conversion to %T", spoke, obj)
	}
	return conv.ConvertTo(hub)
}

func (c *versionedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	spoke, err := c.served(obj)
	if err != nil || spoke == nil {
		return c.or(err, func() error { return c.Client.Get(ctx, key, obj, opts...) })
	}
	if err := c.Client.Get(ctx, key, spoke.(client.Object), opts...); err != nil {
		return err
	}
	return up(spoke, obj)
}

func (c *versionedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	spoke, err := c.served(list)
	if err != nil || spoke == nil {
		return c.or(err, func() error { return c.Client.List(ctx, list, opts...) })
	}
	if err := c.Client.List(ctx, spoke.(client.ObjectList), opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(spoke)
	if err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(list, c.Scheme())
	if err != nil {
		return err
	}
	itemKind := gvk.GroupVersion().WithKind(gvk.Kind[:len(gvk.Kind)-len("List")])
	out := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		o, err := c.Scheme().New(itemKind)
		if err != nil {
			return err
		}
		if err := up(item, o); err != nil {
			return err
		}
		out = append(out, o)
	}
	if err := meta.SetList(list, out); err != nil {
		return err
	}
	list.SetResourceVersion(spoke.(client.ObjectList).GetResourceVersion())
	return nil
}

func (c *versionedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.write(obj, func(o client.Object) error { return c.Client.Create(ctx, o, opts...) })
}

func (c *versionedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.write(obj, func(o client.Object) error { return c.Client.Update(ctx, o, opts...) })
}

func (c *versionedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.write(obj, func(o client.Object) error { return c.Client.Delete(ctx, o, opts...) })
}

func (c *versionedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	spoke, err := c.served(obj)
	if err != nil || spoke == nil {
		return c.or(err, func() error { return c.Client.DeleteAllOf(ctx, obj, opts...) })
	}
	return c.Client.DeleteAllOf(ctx, spoke.(client.Object), opts...)
}

// Patch is refused for a version the cluster does not serve: a patch is
// computed in the lab's version, whose fields the served one may name
// differently.
func (c *versionedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	spoke, err := c.served(obj)
	if err != nil || spoke == nil {
		return c.or(err, func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
	}
	gvk, _ := apiutil.GVKForObject(spoke, c.Scheme())
	return fmt.Errorf("patch %s %s: the management cluster serves %s only; the lab patches no such object", obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), gvk.GroupVersion())
}

// write sends obj through do in the served version and reads the answer
// back into obj.
func (c *versionedClient) write(obj client.Object, do func(client.Object) error) error {
	spoke, err := c.served(obj)
	if err != nil || spoke == nil {
		return c.or(err, func() error { return do(obj) })
	}
	if err := down(obj, spoke); err != nil {
		return err
	}
	if err := do(spoke.(client.Object)); err != nil {
		return err
	}
	return up(spoke, obj)
}

// or is err, or what do returns when err is nil.
func (c *versionedClient) or(err error, do func() error) error {
	if err != nil {
		return err
	}
	return do()
}
