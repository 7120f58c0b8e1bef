// Package versioned is a controller-runtime client that keeps one
// vocabulary of Cluster API and CAPV objects, the compiled release's API
// versions, against a management cluster that does not serve them all: it
// reads and writes an older served version and converts through the
// compiled release's own conversions. The lab uses it for CAPV v1.15
// (infrastructure v1beta1 only), --provider capi for Cluster API up to
// v1.10 (core v1beta1 only).
package versioned

import (
	"context"
	"fmt"

	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// Client reads and writes an object of a version the management cluster
// does not serve in the older version the cluster serves, converting
// through the compiled release's conversions (conversion.Convertible), as
// a conversion webhook would.
type Client struct {
	client.Client
	// watch is Client's watching self, nil when it cannot watch.
	watch client.WithWatch
	disco discovery.DiscoveryInterface
	// mu guards older, found on the first call that needs it (and again
	// after a discovery that failed): it maps each version the client
	// speaks but the cluster does not serve to the one it serves instead.
	mu    sync.Mutex
	found bool
	older map[schema.GroupVersion]schema.GroupVersion
}

// New wraps c for the versions cfg's cluster serves: every v1beta2 group
// version of c's scheme that the cluster does not serve is read and
// written as v1beta1 where the cluster serves that. The cluster is asked
// on the first call, within that call's context.
func New(c client.Client, cfg *rest.Config) (*Client, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("management cluster discovery: %w", err)
	}
	out := &Client{Client: c, disco: dc}
	out.watch, _ = c.(client.WithWatch)
	return out, nil
}

// discover finds which of the scheme's versions fall back, once.
func (c *Client) discover(ctx context.Context) (map[schema.GroupVersion]schema.GroupVersion, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.found {
		return c.older, nil
	}
	var groups metav1.APIGroupList
	if err := c.disco.RESTClient().Get().AbsPath("/apis").Do(ctx).Into(&groups); err != nil {
		return nil, fmt.Errorf("management cluster discovery (which API versions it serves): %w", err)
	}
	served := map[schema.GroupVersion]bool{}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			served[schema.GroupVersion{Group: g.Name, Version: v.Version}] = true
		}
	}
	older := map[schema.GroupVersion]schema.GroupVersion{}
	for _, gv := range c.Scheme().PrioritizedVersionsAllGroups() {
		if gv.Version != "v1beta2" || served[gv] {
			continue
		}
		if old := (schema.GroupVersion{Group: gv.Group, Version: "v1beta1"}); served[old] {
			older[gv] = old
		}
	}
	c.found, c.older = true, older
	return older, nil
}

// Older are the versions the client reads and writes in an older one,
// each as "group/v1beta2 as v1beta1", sorted.
func (c *Client) Older(ctx context.Context) ([]string, error) {
	older, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for gv, old := range older {
		out = append(out, gv.String()+" as "+old.Version)
	}
	slices.Sort(out)
	return out, nil
}

// Watch watches list's kind in the served version: the events carry the
// served version's objects.
func (c *Client) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	if c.watch == nil {
		return nil, fmt.Errorf("this client cannot watch")
	}
	spoke, err := c.served(ctx, list)
	if err != nil {
		return nil, err
	}
	if spoke == nil {
		return c.watch.Watch(ctx, list, opts...)
	}
	return c.watch.Watch(ctx, spoke.(client.ObjectList), opts...)
}

// served is obj's counterpart in the version the cluster serves; nil when
// obj's own version is served.
func (c *Client) served(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	older, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return nil, err
	}
	old, ok := older[gvk.GroupVersion()]
	if !ok {
		return nil, nil
	}
	return c.Scheme().New(old.WithKind(gvk.Kind))
}

// pair is obj, in the client's version (a conversion hub), and spoke, in
// the served one (convertible to and from it).
func pair(obj, spoke runtime.Object) (conversion.Hub, conversion.Convertible, error) {
	hub, ok := obj.(conversion.Hub)
	conv, ok2 := spoke.(conversion.Convertible)
	if !ok || !ok2 {
		return nil, nil, fmt.Errorf("%T has no conversion to %T", obj, spoke)
	}
	return hub, conv, nil
}

// down converts obj into spoke, the served version's.
func down(obj, spoke runtime.Object) error {
	hub, conv, err := pair(obj, spoke)
	if err != nil {
		return err
	}
	return conv.ConvertFrom(hub)
}

// up converts spoke, as the cluster served it, into obj.
func up(spoke, obj runtime.Object) error {
	hub, conv, err := pair(obj, spoke)
	if err != nil {
		return err
	}
	return conv.ConvertTo(hub)
}

func (c *Client) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	spoke, err := c.served(ctx, obj)
	if err != nil || spoke == nil {
		return c.or(err, func() error { return c.Client.Get(ctx, key, obj, opts...) })
	}
	if err := c.Client.Get(ctx, key, spoke.(client.Object), opts...); err != nil {
		return err
	}
	return up(spoke, obj)
}

func (c *Client) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	spoke, err := c.served(ctx, list)
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

func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.write(ctx, obj, func(o client.Object) error { return c.Client.Create(ctx, o, opts...) })
}

func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.write(ctx, obj, func(o client.Object) error { return c.Client.Update(ctx, o, opts...) })
}

func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.write(ctx, obj, func(o client.Object) error { return c.Client.Delete(ctx, o, opts...) })
}

func (c *Client) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	spoke, err := c.served(ctx, obj)
	if err != nil || spoke == nil {
		return c.or(err, func() error { return c.Client.DeleteAllOf(ctx, obj, opts...) })
	}
	return c.Client.DeleteAllOf(ctx, spoke.(client.Object), opts...)
}

// Patch is refused for a version the cluster does not serve: a patch is
// computed in the lab's version, whose fields the served one may name
// differently.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	spoke, err := c.served(ctx, obj)
	if err != nil || spoke == nil {
		return c.or(err, func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
	}
	gvk, _ := apiutil.GVKForObject(spoke, c.Scheme())
	return fmt.Errorf("patch %s %s: the management cluster serves %s only; the lab patches no such object", obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), gvk.GroupVersion())
}

// write sends obj through do in the served version and reads the answer
// back into obj.
func (c *Client) write(ctx context.Context, obj client.Object, do func(client.Object) error) error {
	spoke, err := c.served(ctx, obj)
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
func (c *Client) or(err error, do func() error) error {
	if err != nil {
		return err
	}
	return do()
}
