//go:build ignore

// policy-webhook plays a third-party policy engine in faultline's kind
// scenarios (seed 000, scenario 2): a healthy validating webhook that
// denies every pod it is asked about outside its own namespace.
// hack/kind-image.sh builds it and preloads it as
// faultline.dev/policy-webhook:v1. Like real engines it manages its own
// certificate: at start it makes a serving certificate for its Service,
// writes its CA into the caBundle of the ValidatingWebhookConfiguration
// WEBHOOK_CONFIG names (once, with the pod's service account), then serves
// /validate on :9443.
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func main() {
	ns, service, config := os.Getenv("POD_NAMESPACE"), os.Getenv("SERVICE_NAME"), os.Getenv("WEBHOOK_CONFIG")
	if ns == "" || service == "" || config == "" {
		log.Fatal("POD_NAMESPACE, SERVICE_NAME and WEBHOOK_CONFIG are required")
	}
	cert, caPEM, err := serving(service + "." + ns + ".svc")
	if err != nil {
		log.Fatal(err)
	}
	for {
		err := injectCABundle(config, caPEM)
		if err == nil {
			break
		}
		log.Printf("set the caBundle of %s: %v (retrying)", config, err)
		time.Sleep(2 * time.Second)
	}
	log.Printf("caBundle of %s set; serving", config)
	http.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) { validate(w, r, ns) })
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	srv := &http.Server{Addr: ":9443", TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	log.Fatal(srv.ListenAndServeTLS("", ""))
}

// serving makes a CA and a certificate for dns signed by it.
func serving(dns string) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "policy-webhook-ca"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dns}, DNSNames: []string{dns}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// injectCABundle sets every webhook's caBundle in the named
// ValidatingWebhookConfiguration through the API server.
func injectCABundle(name string, caPEM []byte) error {
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	apiCA, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return err
	}
	roots.AppendCertsFromPEM(apiCA)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	url := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")) +
		"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" + name
	do := func(method string, body []byte) ([]byte, error) {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, out.String())
		}
		return out.Bytes(), nil
	}
	raw, err := do(http.MethodGet, nil)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	hooks, _ := obj["webhooks"].([]any)
	for _, h := range hooks {
		if m, ok := h.(map[string]any); ok {
			cc, _ := m["clientConfig"].(map[string]any)
			if cc == nil {
				cc = map[string]any{}
				m["clientConfig"] = cc
			}
			cc["caBundle"] = base64.StdEncoding.EncodeToString(caPEM)
		}
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = do(http.MethodPut, body)
	return err
}

// validate answers an AdmissionReview: allowed in ns, denied elsewhere.
func validate(w http.ResponseWriter, r *http.Request, ns string) {
	var review struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Request    struct {
			UID       string `json:"uid"`
			Namespace string `json:"namespace"`
		} `json:"request"`
	}
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := map[string]any{"uid": review.Request.UID, "allowed": review.Request.Namespace == ns}
	if review.Request.Namespace != ns {
		resp["status"] = map[string]any{"code": 403, "message": fmt.Sprintf("policy: pods may only be created in namespace %s, not %s", ns, review.Request.Namespace)}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"apiVersion": review.APIVersion, "kind": review.Kind, "response": resp})
}
