//go:build ignore

// policy-webhook plays a third-party policy engine in faultline's kind
// scenarios, as a healthy validating webhook with two policies:
//   - /validate (seed 000, scenario 2) denies every pod it is asked about
//     outside its own namespace;
//   - /protect-notready-nodes (seed 004's Kyverno policy) denies the node
//     controller's deletion of a pod whose node is not Ready.
//
// hack/kind-image.sh builds it and preloads it as
// faultline.dev/policy-webhook:v1. Like real engines it manages its own
// certificate: at start it makes a serving certificate for its Service,
// writes its CA into the caBundle of the ValidatingWebhookConfiguration
// WEBHOOK_CONFIG names (once, with the pod's service account), then serves
// on :9443.
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
	http.HandleFunc("/protect-notready-nodes", protectNotReadyNodes)
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

// apiServer calls the API server with the pod's service account: method on
// path, with a JSON body or none, returning the response body.
func apiServer(method, path string, body []byte) ([]byte, error) {
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	apiCA, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return nil, err
	}
	roots.AppendCertsFromPEM(apiCA)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	url := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")) + path
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

// injectCABundle sets every webhook's caBundle in the named
// ValidatingWebhookConfiguration through the API server.
func injectCABundle(name string, caPEM []byte) error {
	path := "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" + name
	raw, err := apiServer(http.MethodGet, path, nil)
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
	_, err = apiServer(http.MethodPut, path, body)
	return err
}

// review is the part of an AdmissionReview the policies read.
type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    struct {
		UID       string `json:"uid"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		Operation string `json:"operation"`
		UserInfo  struct {
			Username string `json:"username"`
		} `json:"userInfo"`
		OldObject struct {
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
		} `json:"oldObject"`
	} `json:"request"`
}

// answer writes the AdmissionReview response: allowed, or denied with the
// message.
func answer(w http.ResponseWriter, rv review, denied string) {
	resp := map[string]any{"uid": rv.Request.UID, "allowed": denied == ""}
	if denied != "" {
		resp["status"] = map[string]any{"code": 403, "message": denied}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": rv.Kind, "response": resp})
}

// nodeController is who evicts pods from tainted nodes (kube-controller-
// manager's taint eviction controller).
const nodeController = "system:serviceaccount:kube-system:node-controller"

// protectNotReadyNodes is seed 004's policy: the node controller may not
// delete a pod whose node is not Ready, so pods stay bound to a node that
// flaps (or died). The node is read when asked, as Kyverno's apiCall does.
func protectNotReadyNodes(w http.ResponseWriter, r *http.Request) {
	var rv review
	if err := json.NewDecoder(r.Body).Decode(&rv); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	node := rv.Request.OldObject.Spec.NodeName
	if rv.Request.Operation != "DELETE" || rv.Request.UserInfo.Username != nodeController || node == "" {
		answer(w, rv, "")
		return
	}
	raw, err := apiServer(http.MethodGet, "/api/v1/nodes/"+node, nil)
	if err != nil {
		log.Printf("read node %s: %v (allowing)", node, err)
		answer(w, rv, "")
		return
	}
	var n struct {
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		log.Printf("read node %s: %v (allowing)", node, err)
		answer(w, rv, "")
		return
	}
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" && c.Status != "True" {
			msg := fmt.Sprintf("policy: %s delete pod %s/%s of NotReady node %s is not allowed", rv.Request.UserInfo.Username, rv.Request.Namespace, rv.Request.Name, node)
			log.Print(msg)
			answer(w, rv, msg)
			return
		}
	}
	answer(w, rv, "")
}

// validate answers an AdmissionReview: allowed in ns, denied elsewhere.
func validate(w http.ResponseWriter, r *http.Request, ns string) {
	var rv review
	if err := json.NewDecoder(r.Body).Decode(&rv); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rv.Request.Namespace == ns {
		answer(w, rv, "")
		return
	}
	answer(w, rv, fmt.Sprintf("policy: pods may only be created in namespace %s, not %s", ns, rv.Request.Namespace))
}
