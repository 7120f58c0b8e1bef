package workloadapi

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// workloadAPI starts one in-memory workload cluster behind its loopback
// endpoint, and returns a client of it through that endpoint.
func workloadAPI(t *testing.T, ctx context.Context) (*Server, *rest.Config, client.Client) {
	t.Helper()
	mem, err := NewStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rg := "default/t"
	mem.AddResourceGroup(rg)
	w, err := New(mem, rg, logr.Discard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	caKey, err := certs.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "cluster-ca"}, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddAPIServer("kube-apiserver-cp", ca, caKey); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: "https://" + w.Addr().String(), TLSClientConfig: rest.TLSClientConfig{CAData: certs.EncodeCertPEM(ca)}}
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = admissionregv1.AddToScheme(s)
	_ = storagev1.AddToScheme(s)
	_ = policyv1.AddToScheme(s)
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return w, cfg, c
}

// Every kind Cluster API reads from a workload cluster (a reachable Node's
// drain lists VolumeAttachments) and every kind the lab adds lists through
// the endpoint.
func TestWorkloadAPIKinds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, c := workloadAPI(t, ctx)
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

func TestParseExtra(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, resource, namespace, name string
		ok                              bool
	}{
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "validatingwebhookconfigurations", "", "", true},
		{"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/x", "mutatingwebhookconfigurations", "", "x", true},
		{"/api/v1/namespaces/kube-system/events", "events", "kube-system", "", true},
		{"/api/v1/namespaces/kube-system/events/e1", "events", "kube-system", "e1", true},
		{"/api/v1/events", "events", "", "", true},
		// Cluster-scoped kinds are not served under a namespace; the
		// in-memory server's own kinds pass through.
		{"/apis/admissionregistration.k8s.io/v1/namespaces/x/validatingwebhookconfigurations", "", "", "", false},
		{"/api/v1/namespaces/kube-system", "", "", "", false},
		{"/api/v1/nodes", "", "", "", false},
		{"/apis/apps/v1/namespaces/kube-system/daemonsets", "", "", "", false},
		{"/api/v1/namespaces/kube-system/pods/p/portforward", "", "", "", false},
	}
	for _, tc := range tests {
		req, ok := parseExtra(tc.path)
		if ok != tc.ok || req.res.resource != tc.resource || req.namespace != tc.namespace || req.name != tc.name {
			t.Errorf("%s: got %+v %t", tc.path, req, ok)
		}
	}
}

func TestParseCollection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"/api/v1/namespaces/metallb-system/configmaps", "/v1, Resource=configmaps metallb-system", true},
		{"/apis/crd.projectcalico.org/v1/ippools", "crd.projectcalico.org/v1, Resource=ippools ", true},
		{"/api/v1/namespaces/x/configmaps/name", "", false},
		{"/healthz", "", false},
	} {
		gvr, ns, ok := parseCollection(tc.path)
		if got := gvr.String() + " " + ns; ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: %q %t, want %q %t", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}
