package artifacts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/providers"
)

// DumpDir is the folder, inside a run folder, that holds the dumps.
const DumpDir = "dumps"

// dumpKinds are what a failed run dumps, in the order a reader wants
// them: Cluster API's view first, then the workload cluster's.
var dumpKinds = []struct {
	file, cluster, apiVersion, kind string
}{
	{"clusters.yaml", "management", "cluster.x-k8s.io/v1beta2", "Cluster"},
	{"machines.yaml", "management", "cluster.x-k8s.io/v1beta2", "Machine"},
	{"machinehealthchecks.yaml", "management", "cluster.x-k8s.io/v1beta2", "MachineHealthCheck"},
	{"kubeadmcontrolplanes.yaml", "management", "controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane"},
	{"management-events.yaml", "management", "v1", "Event"},
	{"nodes.yaml", "workload", "v1", "Node"},
	{"workload-events.yaml", "workload", "v1", "Event"},
}

// Dump writes, into <dir>/dumps, YAML dumps of the clusters scope belongs
// to: the management cluster's Clusters, Machines, MachineHealthChecks and
// KubeadmControlPlanes in scope's namespace, the Nodes of its workload
// cluster, the events of both since since, and the vCenter's VMs when o
// can list them. Secrets are never read, and every value that looks like a
// credential is redacted (see Redact). It returns the files written,
// relative to dir; what could not be read is an error beside them, and
// the rest is still written.
func Dump(ctx context.Context, o providers.Objects, scope providers.Object, dir string, since time.Time) ([]string, error) {
	if err := os.MkdirAll(filepath.Join(dir, DumpDir), 0o750); err != nil {
		return nil, fmt.Errorf("create dumps folder: %w", err)
	}
	var files []string
	var errs []error
	write := func(name string, v any) {
		b, err := yaml.Marshal(v)
		if err == nil {
			err = writeSynced(filepath.Join(dir, DumpDir, name), b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("dump %s: %w", name, err))
			return
		}
		files = append(files, DumpDir+"/"+name)
	}
	ns := scope.Attributes[providers.AttrNamespace]
	for _, k := range dumpKinds {
		ref := providers.ObjectRef{Cluster: k.cluster, APIVersion: k.apiVersion, Kind: k.kind}
		if k.cluster == "management" {
			ref.Namespace = ns
		}
		objs, err := o.ListObjects(ctx, scope, ref)
		if errors.Is(err, providers.ErrNotFound) || errors.Is(err, providers.ErrUnsupported) {
			continue // a kind the cluster does not serve, or a cluster the provider has not (kind's management)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("dump %s: %w", k.file, err))
			continue
		}
		if k.kind == "Event" {
			objs = eventsSince(objs, since)
		}
		for _, obj := range objs {
			Redact(obj)
		}
		write(k.file, map[string]any{"apiVersion": k.apiVersion, "kind": k.kind + "List", "items": objs})
	}
	if inv, ok := o.(providers.Inventory); ok {
		vms, err := inv.ListVMs(ctx)
		switch {
		case err == nil:
			write("vcenter-vms.yaml", vms)
		case !errors.Is(err, providers.ErrUnsupported):
			errs = append(errs, fmt.Errorf("dump vcenter-vms.yaml: %w", err))
		}
	}
	return files, errors.Join(errs...)
}

// eventsSince keeps the events last seen at or after since, oldest first.
func eventsSince(events []map[string]any, since time.Time) []map[string]any {
	stamp := func(e map[string]any) time.Time {
		for _, f := range []string{"lastTimestamp", "eventTime", "firstTimestamp"} {
			if s, ok := e[f].(string); ok {
				if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
					return t
				}
			}
		}
		if m, ok := e["metadata"].(map[string]any); ok {
			if s, ok := m["creationTimestamp"].(string); ok {
				if t, err := time.Parse(time.RFC3339, s); err == nil {
					return t
				}
			}
		}
		return time.Time{}
	}
	var out []map[string]any
	for _, e := range events {
		// Event times have second resolution.
		if !stamp(e).Before(since.Truncate(time.Second)) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return stamp(out[i]).Before(stamp(out[j])) })
	return out
}

// secretKey matches the names of fields that hold credentials or file
// contents (a KubeadmControlPlane's files may carry keys), not those that
// name one (dataSecretName).
var secretKey = regexp.MustCompile(`(?i)(password|passwd|token|secret|credentials?|private[-_]?key|content|-data)$`)

// userinfo matches the user:password@ of a URL.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// Redacted replaces what Redact removes.
const Redacted = "<redacted>"

// Redact removes credentials from an object as the API serves it, in
// place: managedFields, the last-applied annotation (a copy of whatever
// was applied), string values under fields whose names say they are
// credentials, and the user info of any URL.
func Redact(obj map[string]any) {
	if m, ok := obj["metadata"].(map[string]any); ok {
		delete(m, "managedFields")
		if a, ok := m["annotations"].(map[string]any); ok {
			delete(a, "kubectl.kubernetes.io/last-applied-configuration")
		}
	}
	redactValue(obj)
}

func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if _, isString := x.(string); isString && secretKey.MatchString(k) {
				t[k] = Redacted
				continue
			}
			t[k] = redactValue(x)
		}
	case []any:
		for i, x := range t {
			t[i] = redactValue(x)
		}
	case string:
		return redactText(t)
	}
	return v
}

// WithoutUserinfo leaves the user info of every URL in s out, for a
// command line that must still reach the URL (redactText marks it
// instead).
func WithoutUserinfo(s string) string { return userinfo.ReplaceAllString(s, "${1}") }

// freeCredential matches a credential said in free text, as a
// controller's Event or a condition's message may quote a command line
// or a config: password=..., token: ..., api-key "...", Bearer ....
var freeCredential = regexp.MustCompile(`(?i)\b((?:password|passwd|pwd|token|secret|api[-_]?key|access[-_]?key|client[-_]?secret)\s*[:=]\s*|bearer\s+)("[^"]*"|'[^']*'|[^\s,;&"']+)`)

// redactText removes the user info of every URL in s and every
// credential it says in free text.
func redactText(s string) string {
	if strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	}
	return freeCredential.ReplaceAllString(s, "${1}"+Redacted)
}
