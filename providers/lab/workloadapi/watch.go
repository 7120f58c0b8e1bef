package workloadapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func isWatchRequest(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// watchEvents forwards the in-memory store's events of one kind in one
// resource group.
type watchEvents struct {
	rg     string
	events chan watchEvent
}

type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object client.Object   `json:"object"`
}

func (w *watchEvents) send(rg string, t watch.EventType, o client.Object) {
	if rg != w.rg {
		return
	}
	select {
	case w.events <- watchEvent{t, o}:
	default: // a stalled watcher misses events; its client relists
	}
}

func (w *watchEvents) OnCreate(rg string, o client.Object)    { w.send(rg, watch.Added, o) }
func (w *watchEvents) OnUpdate(rg string, _, o client.Object) { w.send(rg, watch.Modified, o) }
func (w *watchEvents) OnDelete(rg string, o client.Object)    { w.send(rg, watch.Deleted, o) }
func (w *watchEvents) OnGeneric(string, client.Object)        {}

// watch streams the current objects as ADDED, the bookmark that ends the
// initial events, then every change until the client leaves or its
// timeoutSeconds passes.
func (x *extraAPI) watch(rw http.ResponseWriter, r *http.Request, req extraRequest) {
	ctx := r.Context()
	gvk := req.res.gvk()
	cache := x.mem.GetCache()
	inf, err := cache.GetInformerForKind(ctx, gvk)
	if err != nil {
		writeError(x.log, rw, err)
		return
	}
	w := &watchEvents{rg: x.rg, events: make(chan watchEvent, 1000)}
	if err := inf.AddEventHandler(w); err != nil {
		writeError(x.log, rw, err)
		return
	}
	defer func() {
		if err := inf.RemoveEventHandler(w); err != nil {
			x.log.V(1).Info("end watch", "kind", gvk.Kind, "error", err.Error())
		}
	}()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(req.res.kind + "List"))
	var opts []client.ListOption
	if req.namespace != "" {
		opts = append(opts, client.InNamespace(req.namespace))
	}
	if err := x.locked.List(ctx, list, opts...); err != nil {
		writeError(x.log, rw, err)
		return
	}
	since, _ := strconv.ParseUint(r.URL.Query().Get("resourceVersion"), 10, 64)
	bookmark, err := cache.GetBookmarkResourceVersion(x.rg)
	if err != nil {
		writeError(x.log, rw, err)
		return
	}
	flusher, ok := rw.(http.Flusher)
	if !ok {
		writeError(x.log, rw, errors.New("watch needs a streaming connection"))
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(rw)
	write := func(t watch.EventType, o map[string]any) error {
		return enc.Encode(map[string]any{"type": t, "object": o})
	}
	for i := range list.Items {
		item := &list.Items[i]
		if rv, _ := strconv.ParseUint(item.GetResourceVersion(), 10, 64); since == 0 || rv > since {
			item.SetGroupVersionKind(gvk)
			if write(watch.Added, item.Object) != nil {
				return
			}
		}
	}
	mark := &unstructured.Unstructured{}
	mark.SetGroupVersionKind(gvk)
	mark.SetResourceVersion(bookmark)
	mark.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	if write(watch.Bookmark, mark.Object) != nil {
		return
	}
	flusher.Flush()
	x.stream(ctx, r, req, w.events, func(t watch.EventType, o map[string]any) error {
		if err := write(t, o); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	})
}

// stream sends the watch's events until ctx ends, the request's
// timeoutSeconds (30 minutes by default) pass or send fails.
func (x *extraAPI) stream(ctx context.Context, r *http.Request, req extraRequest, events <-chan watchEvent, send func(watch.EventType, map[string]any) error) {
	gvk := req.res.gvk()
	timeout := 30 * time.Minute
	if s, err := strconv.Atoi(r.URL.Query().Get("timeoutSeconds")); err == nil && s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	done := time.NewTimer(timeout)
	defer done.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done.C:
			return
		case ev := <-events:
			if req.namespace != "" && ev.Object.GetNamespace() != req.namespace {
				continue
			}
			obj, err := x.locked.snapshot(ev.Object)
			if err != nil {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetGroupVersionKind(gvk)
			if send(ev.Type, u.Object) != nil {
				return
			}
		}
	}
}
