package workloadapi

import (
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// wantsTable tells whether r asks for the server-side printing kubectl
// asks for (Accept: application/json;as=Table;v=v1;g=meta.k8s.io).
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if strings.Contains(part, "as=Table") && strings.Contains(part, "g=meta.k8s.io") {
			return true
		}
	}
	return false
}

// nodeColumns are kube-apiserver's columns of a Node (pkg/printers/
// internalversion, printNode): the wide ones have priority 1.
var nodeColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Status", Type: "string"},
	{Name: "Roles", Type: "string"},
	{Name: "Age", Type: "string"},
	{Name: "Version", Type: "string"},
	{Name: "Internal-IP", Type: "string", Priority: 1},
	{Name: "External-IP", Type: "string", Priority: 1},
	{Name: "OS-Image", Type: "string", Priority: 1},
	{Name: "Kernel-Version", Type: "string", Priority: 1},
	{Name: "Container-Runtime", Type: "string", Priority: 1},
}

// serveNodeTable answers a GET of the Nodes (or of one) asked as a Table,
// as kube-apiserver prints them, so `kubectl get nodes` shows STATUS,
// ROLES, VERSION and, with -o wide, INTERNAL-IP. It tells whether r was
// such a request.
func (x *extraAPI) serveNodeTable(rw http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet || !wantsTable(r) || isWatchRequest(r) {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/nodes")
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) || strings.Count(rest, "/") > 1 {
		return false
	}
	c := x.mem.GetResourceGroup(x.rg).GetClient()
	var nodes []corev1.Node
	if name := strings.TrimPrefix(rest, "/"); name != "" {
		var n corev1.Node
		if err := c.Get(r.Context(), client.ObjectKey{Name: name}, &n); err != nil {
			writeError(x.log, rw, err)
			return true
		}
		nodes = append(nodes, n)
	} else {
		var list corev1.NodeList
		if err := c.List(r.Context(), &list); err != nil {
			writeError(x.log, rw, err)
			return true
		}
		nodes = list.Items
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	}
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, ColumnDefinitions: nodeColumns}
	for i := range nodes {
		table.Rows = append(table.Rows, nodeRow(&nodes[i], time.Now()))
	}
	writeJSON(x.log, rw, http.StatusOK, table)
	return true
}

// nodeRow is n's row, with its metadata as the object (kubectl's default
// includeObject=Metadata).
func nodeRow(n *corev1.Node, now time.Time) metav1.TableRow {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	var roles []string
	for l := range n.Labels {
		if role, ok := strings.CutPrefix(l, "node-role.kubernetes.io/"); ok && role != "" {
			roles = append(roles, role)
		}
	}
	sort.Strings(roles)
	role := strings.Join(roles, ",")
	if role == "" {
		role = "<none>"
	}
	internal, external := "<none>", "<none>"
	for _, a := range n.Status.Addresses {
		switch {
		case a.Type == corev1.NodeInternalIP && internal == "<none>":
			internal = a.Address
		case a.Type == corev1.NodeExternalIP && external == "<none>":
			external = a.Address
		}
	}
	info := n.Status.NodeInfo
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: n.ObjectMeta}
	meta.ManagedFields = nil
	return metav1.TableRow{
		Cells: []any{n.Name, status, role, duration.HumanDuration(now.Sub(n.CreationTimestamp.Time)), info.KubeletVersion,
			internal, external, orNone(info.OSImage), orNone(info.KernelVersion), orNone(info.ContainerRuntimeVersion)},
		Object: runtime.RawExtension{Object: meta},
	}
}

func orNone(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
