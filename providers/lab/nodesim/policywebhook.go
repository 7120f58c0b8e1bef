package nodesim

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/cluster-api/util/certs"
)

// policyWebhook stands in for a third-party policy engine's validating
// webhook (seed 000 names Gatekeeper, Kyverno, Rancher...): a real HTTPS
// server on 127.0.0.1 that denies every pod outside its own namespace, the
// policy seed 000's scenario 2 describes, or allows everything. Its certificate names the
// Service it is reached through, and is signed by its own CA.
type policyWebhook struct {
	namespace string
	// denyOutside: the policy denies pods outside namespace; otherwise it
	// allows everything, as a validating webhook for good objects does
	// (seed 001's MetalLB).
	denyOutside bool
	srv         *http.Server
	addr        string
	caPEM       []byte
	// node is where its pod runs, once there is a worker to run it.
	node string
	// served receives why it stopped serving; close reports it.
	served chan error
}

// startPolicyWebhook serves the webhook for Service name in namespace.
func startPolicyWebhook(namespace, name string, denyOutside bool) (*policyWebhook, error) {
	caKey, err := workloadapi.NewKey()
	if err != nil {
		return nil, err
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "policy-engine-ca"}, caKey)
	if err != nil {
		return nil, fmt.Errorf("policy webhook CA: %w", err)
	}
	key, err := workloadapi.NewKey()
	if err != nil {
		return nil, err
	}
	svc := name + "." + namespace + ".svc"
	cert, err := workloadapi.Signed(&certs.Config{
		CommonName: svc,
		AltNames:   certs.AltNames{DNSNames: []string{svc, svc + ".cluster.local"}},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, key, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("policy webhook certificate: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("policy webhook: %w", err)
	}
	p := &policyWebhook{namespace: namespace, denyOutside: denyOutside, addr: l.Addr().String(), caPEM: certs.EncodeCertPEM(ca), served: make(chan error, 1)}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.review),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          stdlog.New(io.Discard, "", 0),
	}
	go func() { p.served <- p.srv.ServeTLS(l, "", "") }()
	return p, nil
}

// review answers one AdmissionReview.
func (p *policyWebhook) review(rw http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 3<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "expected an AdmissionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if p.denyOutside && req.Namespace != p.namespace {
		resp.Allowed = false
		resp.Result = &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("[allowed-namespaces] %s %s/%s: namespace %s is not allowed; only %s is", req.Kind.Kind, req.Namespace, req.Name, req.Namespace, p.namespace),
		}
	}
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(&review)
}

func (p *policyWebhook) close() error {
	if err := p.srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	if err := <-p.served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("policy webhook on %s: %w", p.addr, err)
	}
	return nil
}
