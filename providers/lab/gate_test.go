package lab_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// TestIntegrationVCenterCut: with CAPV's way to vcsim cut, the Cluster's
// infrastructure turns not ready (CAPV's VCenterAvailable); restored at
// once, ready again within seconds. (Cut for 35 s, CAPV's VSphereCluster
// reconcile failed 27-97 times, its per-item backoff reached its 1000 s
// cap, and it was not ready again 13 minutes later; an update of the
// VSphereCluster made it ready at once. vcenter-unreachable-pauses-
// remediation asserts the first, at night.)
func TestIntegrationVCenterCut(t *testing.T) {
	l := startLab(t, lab.ClusterSpec{Name: "lab", LabSpec: labconfig.LabSpec{ControlPlanes: 1, Workers: 1}})
	ctx := t.Context()
	infraReady := func(want bool, within time.Duration) {
		t.Helper()
		var last string
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
			c := &clusterv1.Cluster{}
			if err := l.Client().Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: "lab"}, c); err != nil {
				return false, err
			}
			cond := conditions.Get(c, clusterv1.ClusterInfrastructureReadyCondition)
			if cond != nil {
				last = string(cond.Status) + ": " + cond.Message
			}
			return conditions.IsTrue(c, clusterv1.ClusterInfrastructureReadyCondition) == want, nil
		})
		if err != nil {
			t.Fatalf("InfrastructureReady %v within %s: %v (last %s)", want, within, err, last)
		}
	}
	infraReady(true, time.Minute)
	if err := l.Provider().SetVCenterReachable(ctx, false); err != nil {
		t.Fatal(err)
	}
	infraReady(false, time.Minute)
	began := time.Now()
	if err := l.Provider().SetVCenterReachable(ctx, true); err != nil {
		t.Fatal(err)
	}
	infraReady(true, 3*time.Minute)
	t.Logf("infrastructure ready again %s after vCenter was back", time.Since(began).Round(100*time.Millisecond))
}
