package workloadapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// isDryRunCreate tells a server-side dry-run create: the request a client
// makes to learn whether kube-apiserver, webhooks included, would accept
// an object.
func isDryRunCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Query().Get("dryRun") == "All"
}

// serveDryRunCreate answers a dry-run create as kube-apiserver does as far
// as admission goes: the cluster's webhooks see the object (the in-memory
// API server runs none), and nothing is stored. It runs outside the
// store's lock: a webhook may take its whole timeout to answer.
func (w *Server) serveDryRunCreate(rw http.ResponseWriter, r *http.Request) {
	gvr, namespace, ok := parseCollection(r.URL.Path)
	if !ok {
		writeError(w.log, rw, apierrors.NewBadRequest("dry-run create: expected a collection path, got "+r.URL.Path))
		return
	}
	u, err := decodeObject(w.mem.GetScheme(), r)
	if err != nil {
		writeError(w.log, rw, err)
		return
	}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	if w.admitter == nil {
		writeJSON(w.log, rw, http.StatusCreated, u.Object)
		return
	}
	a, err := w.admitter(r.Context())
	if err == nil {
		err = a.admitObject(r.Context(), u, gvr, "kubernetes-admin", true)
	}
	if err != nil {
		writeError(w.log, rw, err)
		return
	}
	writeJSON(w.log, rw, http.StatusCreated, u.Object)
}

// parseCollection reads /api/v1[/namespaces/NS]/RESOURCE and
// /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE.
func parseCollection(path string) (schema.GroupVersionResource, string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var gvr schema.GroupVersionResource
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gvr.Group, gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return gvr, "", false
	}
	var namespace string
	if len(parts) == 3 && parts[0] == "namespaces" {
		namespace, parts = parts[1], parts[2:]
	}
	if len(parts) != 1 {
		return gvr, "", false
	}
	gvr.Resource = parts[0]
	return gvr, namespace, true
}

// admitObject runs the mutating then the validating webhooks on the
// creation of obj by user.
func (a *Admitter) admitObject(ctx context.Context, obj *unstructured.Unstructured, gvr schema.GroupVersionResource, by string, dryRun bool) error {
	return a.run(ctx, admission.NewAttributesRecord(obj, nil, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(), gvr, "",
		admission.Create, &metav1.CreateOptions{}, dryRun, &user.DefaultInfo{Name: by}))
}

// decodeObject reads a request's object: JSON, or protobuf as typed
// clients send built-in kinds.
func decodeObject(scheme *runtime.Scheme, r *http.Request) (*unstructured.Unstructured, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
	if err != nil {
		return nil, apierrors.NewBadRequest("read body: " + err.Error())
	}
	u := &unstructured.Unstructured{}
	switch ct := r.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, runtime.ContentTypeProtobuf):
		obj, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode(b, nil, nil)
		if err != nil {
			return nil, apierrors.NewBadRequest("decode body: " + err.Error())
		}
		if u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, apierrors.NewBadRequest("decode body: " + err.Error())
		}
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil || len(gvks) == 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decode body: kind of %T: %v", obj, err))
		}
		u.SetGroupVersionKind(gvks[0])
	case ct == "" || strings.HasPrefix(ct, runtime.ContentTypeJSON):
		if err := json.Unmarshal(b, &u.Object); err != nil {
			return nil, apierrors.NewBadRequest("decode body: " + err.Error())
		}
	default:
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: fmt.Sprintf("the lab's workload API takes JSON or protobuf, not %s", ct),
		}}
	}
	return u, nil
}
