// Package workloadapitest starts a workload API server for tests: test
// helpers only, for the workload API servers' and the node simulator's
// tests; it must not be imported by non-test code.
package workloadapitest

import (
	"context"
	"crypto"
	"crypto/x509"
	"testing"

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

	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
)

// Start starts one in-memory workload cluster behind its loopback
// endpoint with an API server, and returns it, its REST config and a
// client of it through that endpoint. Its dry-run creates go through
// *admitter once set, when admitter is not nil.
func Start(t *testing.T, ctx context.Context, admitter **workloadapi.Admitter) (*workloadapi.Server, *rest.Config, client.Client) {
	t.Helper()
	mem, err := workloadapi.NewStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rg := "default/t"
	mem.AddResourceGroup(rg)
	var admit func(context.Context) (*workloadapi.Admitter, error)
	if admitter != nil {
		admit = func(context.Context) (*workloadapi.Admitter, error) { return *admitter, nil }
	}
	w, err := workloadapi.New(mem, rg, logr.Discard(), admit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	ca, caKey := CA(t, "cluster-ca")
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

// CA is a new self-signed CA named name and its key, as a cluster's CA
// Secrets hold them (the API servers' and etcd members' certificates are
// signed with it).
func CA(t *testing.T, name string) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	key, err := certs.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name}, key)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}
