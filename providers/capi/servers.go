package capi

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// infraGroup is CAPV's API group.
const infraGroup = "infrastructure.cluster.x-k8s.io"

// VCenterServers reads which vCenter servers the management cluster's CAPV
// objects name in spec.server (VSphereClusters and VSphereVMs of cluster,
// namespace/name, or of every cluster when it is ""), each with the
// objects that name it, as "Kind namespace/name". It reads the version of
// each kind the API server prefers, so any CAPV release answers; none
// when CAPV is not installed.
func VCenterServers(ctx context.Context, c client.Client, cluster string) (map[string][]string, error) {
	namespace, name, _ := strings.Cut(cluster, "/")
	out := map[string][]string{}
	for _, kind := range []string{"VSphereCluster", "VSphereVM"} {
		m, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: infraGroup, Kind: kind})
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("find %s's API version: %w", kind, err)
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("list %s: %w", kind, err)
		}
		for _, o := range list.Items {
			server, _, _ := unstructured.NestedString(o.Object, "spec", "server")
			if server == "" || (name != "" && !ownedBy(o, name)) {
				continue
			}
			out[server] = append(out[server], kind+" "+o.GetNamespace()+"/"+o.GetName())
		}
	}
	return out, nil
}

// ownedBy tells whether a CAPV object belongs to the Cluster named name
// (in its namespace): by Cluster API's cluster-name label, or, for a
// VSphereCluster, by its owner reference to the Cluster.
func ownedBy(o unstructured.Unstructured, name string) bool {
	if o.GetLabels()[clusterv1.ClusterNameLabel] == name {
		return true
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Cluster" && ref.Name == name {
			return true
		}
	}
	return false
}

// SameServer tells whether a CAPV spec.server (a host, host:port or URL,
// as CAPV accepts) names the vCenter at u: the same host name, and the
// same port where both say one (443 when a URL leaves it out).
func SameServer(u *url.URL, server string) bool {
	su, ok := serverURL(server)
	if !ok {
		return false
	}
	if !strings.EqualFold(strings.TrimSuffix(su.Hostname(), "."), strings.TrimSuffix(u.Hostname(), ".")) {
		return false
	}
	return su.Port() == "" || su.Port() == portOf(u)
}

// serverURL is a CAPV spec.server (a host, host:port or URL) as a URL;
// false when it names no host.
func serverURL(server string) (*url.URL, bool) {
	s := server
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	return u, err == nil && u.Hostname() != ""
}

// ServerMismatchError is a vCenter that is not the one the management
// cluster's objects name: reading it would report every Machine's VM as
// missing, and faulting it would hit VMs of another cluster.
type ServerMismatchError struct {
	// VCenter is the vCenter given; Others the servers the cluster's
	// objects name instead, each with up to three of its objects.
	VCenter string
	Others  map[string][]string
}

func (e *ServerMismatchError) Error() string {
	servers := make([]string, 0, len(e.Others))
	for s := range e.Others {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	parts := make([]string, 0, len(servers))
	for _, s := range servers {
		objs := e.Others[s]
		sort.Strings(objs)
		more := ""
		if len(objs) > 3 {
			more = fmt.Sprintf(" and %d more", len(objs)-3)
			objs = objs[:3]
		}
		parts = append(parts, fmt.Sprintf("%s (%s%s)", s, strings.Join(objs, ", "), more))
	}
	return fmt.Sprintf("vCenter %s is not the cluster's: its objects name %s in spec.server; give that vCenter's URL", e.VCenter, strings.Join(parts, " and "))
}

// CheckServer returns a *ServerMismatchError when an object of cluster
// (namespace/name, "" every one) names a vCenter server other than u.
func CheckServer(ctx context.Context, c client.Client, cluster string, u *url.URL) error {
	servers, err := VCenterServers(ctx, c, cluster)
	if err != nil {
		return err
	}
	others := map[string][]string{}
	for s, objs := range servers {
		if !SameServer(u, s) {
			others[s] = objs
		}
	}
	if len(others) == 0 {
		return nil
	}
	return &ServerMismatchError{VCenter: u.Host, Others: others}
}

// portOf is u's port, 443 when it leaves it out.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return "443"
}
