package check

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/providers"
)

// listObjects is an Objects whose lists come from a function.
type listObjects func(ref providers.ObjectRef) ([]map[string]any, error)

func (l listObjects) GetObject(context.Context, providers.Object, providers.ObjectRef) (map[string]any, error) {
	return nil, nil
}

func (l listObjects) ListObjects(_ context.Context, _ providers.Object, ref providers.ObjectRef) ([]map[string]any, error) {
	return l(ref)
}

// TestRunChecksWorkloadDown: with the workload API failing (seed 002's
// quorum loss) the management checks still run, and the failure is an
// error finding, not an error.
func TestRunChecksWorkloadDown(t *testing.T) {
	o := listObjects(func(ref providers.ObjectRef) ([]map[string]any, error) {
		if ref.Cluster == "workload" {
			return nil, errors.New("etcdserver: no leader")
		}
		if ref.Kind == "KubeadmControlPlane" {
			return []map[string]any{{"metadata": map[string]any{"name": "cp", "labels": map[string]any{"cluster.x-k8s.io/cluster-name": "c1"}}}}, nil
		}
		return nil, nil
	})
	scope := providers.Object{Attributes: map[providers.Attribute]string{providers.AttrNamespace: "ns", providers.AttrCluster: "c1"}}
	got, err := RunChecks(context.Background(), o, scope)
	if err != nil {
		t.Fatal(err)
	}
	byID := findingsByID(got)
	if f := byID["workload-api-unavailable"]; f.Severity != "error" || !strings.Contains(f.Message, "the workload API of ns/c1 cannot be read: list") && !strings.Contains(f.Message, "etcdserver: no leader") {
		t.Errorf("workload-api-unavailable: %+v", f)
	}
	if _, ok := byID["kcp-remediation-unbounded"]; !ok {
		t.Errorf("the management checks did not run: %+v", got)
	}
}
