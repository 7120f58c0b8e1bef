package workloadapi_test

import (
	"context"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers/lab/workloadapi/workloadapitest"
)

// Every kind Cluster API reads from a workload cluster (a reachable Node's
// drain lists VolumeAttachments) and every kind the lab adds lists through
// the endpoint.
func TestWorkloadAPIKinds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, c := workloadapitest.Start(t, ctx, nil)
	for _, l := range []client.ObjectList{
		&storagev1.VolumeAttachmentList{}, &policyv1.PodDisruptionBudgetList{}, &corev1.EventList{},
		&admissionregv1.ValidatingWebhookConfigurationList{}, &admissionregv1.MutatingWebhookConfigurationList{},
		&corev1.NodeList{}, &corev1.PodList{},
	} {
		if err := c.List(ctx, l); err != nil {
			t.Errorf("list %T: %v", l, err)
		}
	}
}
