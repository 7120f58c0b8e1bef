package workloadapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// extraResource is a kind the lab's workload API serves on top of Cluster
// API's in-memory API server, whose list of resources is fixed: the kinds
// the seeds' faults are made of (webhook configurations, Events, Calico's
// pools).
type extraResource struct {
	group, version, resource, kind string
	namespaced                     bool
	// defaults, when set, applies what kube-apiserver defaults on write.
	defaults func(obj map[string]any)
}

var extraResources = []extraResource{
	{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, webhookDefaults(false)},
	{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, webhookDefaults(true)},
	{"", "v1", "events", "Event", true, nil},
	// Calico's IPAM state, kept in the Kubernetes API (seed 001).
	{"crd.projectcalico.org", "v1", "ippools", "IPPool", false, nil},
	{"crd.projectcalico.org", "v1", "blockaffinities", "BlockAffinity", false, nil},
}

// webhookDefaults are admissionregistration/v1's defaults, as
// kube-apiserver applies them: without them a webhook's nil selectors
// would match nothing.
func webhookDefaults(mutating bool) func(map[string]any) {
	setIfMissing := func(m map[string]any, k string, v any) {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return func(obj map[string]any) {
		hooks, _ := obj["webhooks"].([]any)
		for _, h := range hooks {
			hook, ok := h.(map[string]any)
			if !ok {
				continue
			}
			setIfMissing(hook, "failurePolicy", "Fail")
			setIfMissing(hook, "matchPolicy", "Equivalent")
			setIfMissing(hook, "namespaceSelector", map[string]any{})
			setIfMissing(hook, "objectSelector", map[string]any{})
			setIfMissing(hook, "timeoutSeconds", int64(10))
			if mutating {
				setIfMissing(hook, "reinvocationPolicy", "Never")
			}
			if cc, ok := hook["clientConfig"].(map[string]any); ok {
				if svc, ok := cc["service"].(map[string]any); ok {
					setIfMissing(svc, "port", int64(443))
				}
			}
			rules, _ := hook["rules"].([]any)
			for _, r := range rules {
				if rule, ok := r.(map[string]any); ok {
					setIfMissing(rule, "scope", "*")
				}
			}
		}
	}
}

func (r extraResource) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.group, Version: r.version, Kind: r.kind}
}

// extraAPI serves extraResources from the in-memory store of one workload
// cluster and passes every other request to next; it adds them to the
// discovery documents next serves.
type extraAPI struct {
	mem  inmemoryruntime.Manager
	rg   string
	next http.Handler
	// locked is the store for watches, which run outside the server's
	// lock; every other request runs inside it.
	locked *lockedClient
	log    logr.Logger
}

// extraRequest is a request for one of extraResources.
type extraRequest struct {
	res             extraResource
	namespace, name string
}

// parse matches a path against extraResources.
func parseExtra(path string) (extraRequest, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group, version string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		version, rest = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, version, rest = parts[1], parts[2], parts[3:]
	default:
		return extraRequest{}, false
	}
	var req extraRequest
	if len(rest) >= 3 && rest[0] == "namespaces" {
		req.namespace, rest = rest[1], rest[2:]
	}
	if len(rest) == 0 || len(rest) > 2 {
		return extraRequest{}, false
	}
	if len(rest) == 2 {
		req.name = rest[1]
	}
	for _, r := range extraResources {
		if r.group == group && r.version == version && r.resource == rest[0] && (r.namespaced || req.namespace == "") {
			req.res = r
			return req, true
		}
	}
	return extraRequest{}, false
}

func (x *extraAPI) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if x.serveNodeTable(rw, r) {
		return
	}
	if r.Method == http.MethodGet {
		if merged, ok := x.discovery(r); ok {
			writeJSON(x.log, rw, http.StatusOK, merged)
			return
		}
	}
	req, ok := parseExtra(r.URL.Path)
	if !ok {
		x.next.ServeHTTP(rw, r)
		return
	}
	c := x.mem.GetResourceGroup(x.rg).GetClient()
	ctx := r.Context()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(req.res.gvk())
	key := client.ObjectKey{Namespace: req.namespace, Name: req.name}
	var err error
	status := http.StatusOK
	switch {
	case r.Method == http.MethodGet && req.name != "":
		err = c.Get(ctx, key, u)
	case r.Method == http.MethodGet && isWatchRequest(r):
		x.watch(rw, r, req)
		return
	case r.Method == http.MethodGet:
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(req.res.gvk().GroupVersion().WithKind(req.res.kind + "List"))
		var opts []client.ListOption
		if req.namespace != "" {
			opts = append(opts, client.InNamespace(req.namespace))
		}
		if err = c.List(ctx, list, opts...); err == nil {
			writeJSON(x.log, rw, http.StatusOK, list.UnstructuredContent())
			return
		}
	case r.Method == http.MethodPost && req.name == "":
		if err = x.decodeBody(r, u, req); err == nil {
			err = c.Create(ctx, u)
			status = http.StatusCreated
		}
	case r.Method == http.MethodPut && req.name != "":
		if err = x.decodeBody(r, u, req); err == nil {
			err = c.Update(ctx, u)
		}
	case r.Method == http.MethodPatch && req.name != "":
		var body []byte
		if body, err = io.ReadAll(r.Body); err == nil {
			u.SetNamespace(req.namespace)
			u.SetName(req.name)
			err = c.Patch(ctx, u, client.RawPatch(types.PatchType(r.Header.Get("Content-Type")), body))
		}
	case r.Method == http.MethodDelete && req.name != "":
		if err = c.Get(ctx, key, u); err == nil {
			err = c.Delete(ctx, u)
		}
	default:
		err = apierrors.NewMethodNotSupported(schema.GroupResource{Group: req.res.group, Resource: req.res.resource}, r.Method)
	}
	if err != nil {
		writeError(x.log, rw, err)
		return
	}
	u.SetGroupVersionKind(req.res.gvk())
	writeJSON(x.log, rw, status, u.Object)
}

func (x *extraAPI) decodeBody(r *http.Request, u *unstructured.Unstructured, req extraRequest) error {
	got, err := decodeObject(x.mem.GetScheme(), r)
	if err != nil {
		return err
	}
	u.Object = got.Object
	u.SetGroupVersionKind(req.res.gvk())
	if req.res.defaults != nil {
		req.res.defaults(u.Object)
	}
	if req.namespace != "" {
		u.SetNamespace(req.namespace)
	}
	if req.name != "" && u.GetName() != req.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name in the body (%q) does not match the name in the URL (%q)", u.GetName(), req.name))
	}
	return nil
}

// discovery answers /api/v1, /apis and /apis/<extra group>/<version> with
// next's documents plus extraResources.
func (x *extraAPI) discovery(r *http.Request) (any, bool) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch path {
	case "/api/v1":
		var list metav1.APIResourceList
		if !x.nextJSON(r, &list) {
			return nil, false
		}
		list.APIResources = append(list.APIResources, extraResourceList("", "v1")...)
		return &list, true
	case "/apis":
		var groups metav1.APIGroupList
		if !x.nextJSON(r, &groups) {
			return nil, false
		}
		seen := map[string]bool{}
		for _, res := range extraResources {
			if res.group == "" || seen[res.group] {
				continue
			}
			seen[res.group] = true
			gv := metav1.GroupVersionForDiscovery{GroupVersion: res.group + "/" + res.version, Version: res.version}
			groups.Groups = append(groups.Groups, metav1.APIGroup{Name: res.group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
		}
		return &groups, true
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) == 3 && parts[0] == "apis" {
		if list := extraResourceList(parts[1], parts[2]); len(list) > 0 {
			return &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: parts[1] + "/" + parts[2], APIResources: list}, true
		}
	}
	return nil, false
}

func extraResourceList(group, version string) []metav1.APIResource {
	var out []metav1.APIResource
	for _, res := range extraResources {
		if res.group == group && res.version == version {
			out = append(out, metav1.APIResource{
				Name: res.resource, Namespaced: res.namespaced, Kind: res.kind,
				Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"},
			})
		}
	}
	return out
}

// nextJSON runs r through next and decodes its JSON answer.
func (x *extraAPI) nextJSON(r *http.Request, into any) bool {
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Accept", "application/json")
	x.next.ServeHTTP(rec, r2)
	return rec.status == http.StatusOK && json.Unmarshal(rec.body.Bytes(), into) == nil
}

// recorder keeps what a handler writes.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// replay sends what was recorded to rw.
func (c *recorder) replay(log logr.Logger, rw http.ResponseWriter) {
	for k, v := range c.header {
		rw.Header()[k] = v
	}
	rw.WriteHeader(c.status)
	if _, err := rw.Write(c.body.Bytes()); err != nil {
		log.V(1).Info("write answer", "error", err.Error())
	}
}

func (c *recorder) Header() http.Header         { return c.header }
func (c *recorder) Write(b []byte) (int, error) { return c.body.Write(b) }
func (c *recorder) WriteHeader(status int)      { c.status = status }

// writeJSON answers with v. A write that fails means the client left:
// there is nobody to tell but the log.
func writeJSON(log logr.Logger, rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	if err := json.NewEncoder(rw).Encode(v); err != nil {
		log.V(1).Info("write answer", "error", err.Error())
	}
}

// writeError answers with err as a Status, as kube-apiserver does.
func writeError(log logr.Logger, rw http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	s := st.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(log, rw, int(s.Code), s)
}
