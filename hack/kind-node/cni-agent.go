//go:build ignore

// cni-agent is the pod network's node agent of faultline's real-node lab
// clusters, where kindnetd would be (no registry serves its image here):
// a DaemonSet pod on the host network that reads its Node's spec.podCIDR
// (kube-controller-manager allocates it), writes the node's CNI
// configuration (ptp, host-local and portmap, the node image's plugins, as
// kindnetd writes it) and routes every other Node's pod CIDR to that
// Node's InternalIP. Until its pod runs, containerd has no CNI
// configuration and the Node stays NotReady ("cni plugin not
// initialized"), as with any real CNI whose agent cannot start: an
// admission webhook refusing its pod keeps the node out.
//
// hack/kind-image.sh builds it and preloads it as faultline.dev/cni-agent:v1.
// The node's root is mounted at /host: the configuration goes to
// /host/etc/cni/net.d, and routes are set with the node's own ip(8)
// (chrooted to /host), the pod sharing the node's network namespace.
//
//	NODE_NAME               the pod's Node (the downward API's spec.nodeName)
//	CONTROL_PLANE_ENDPOINT  the API server's host:port (the control-plane
//	                        endpoint, as kindnetd takes it): the kubernetes
//	                        Service works only once kube-proxy runs
//	                        (default: KUBERNETES_SERVICE_HOST and _PORT)
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	saDir    = "/var/run/secrets/kubernetes.io/serviceaccount"
	host     = "/host"
	confPath = "/etc/cni/net.d/10-faultline.conflist"
	every    = 2 * time.Second
)

func main() {
	self := os.Getenv("NODE_NAME")
	if self == "" {
		log.Fatal("cni-agent: NODE_NAME is empty: set it from the downward API's spec.nodeName")
	}
	routed := map[string]string{}
	resync := time.NewTicker(every)
	defer resync.Stop()
	for ; ; <-resync.C {
		if err := sync(self, routed); err != nil {
			log.Print(err)
		}
	}
}

type node struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		PodCIDR string `json:"podCIDR"`
	} `json:"spec"`
	Status struct {
		Addresses []struct {
			Type    string `json:"type"`
			Address string `json:"address"`
		} `json:"addresses"`
	} `json:"status"`
}

func (n node) internalIP() string {
	for _, a := range n.Status.Addresses {
		if a.Type == "InternalIP" && net.ParseIP(a.Address).To4() != nil {
			return a.Address
		}
	}
	return ""
}

// sync writes this node's configuration once its pod CIDR is known, and
// routes the other nodes' pod CIDRs; routed remembers what was set.
func sync(self string, routed map[string]string) error {
	raw, err := apiGet("/api/v1/nodes")
	if err != nil {
		return err
	}
	var list struct {
		Items []node `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("decode the node list: %w", err)
	}
	for _, n := range list.Items {
		if n.Spec.PodCIDR == "" || strings.Contains(n.Spec.PodCIDR, ":") {
			continue
		}
		if n.Metadata.Name == self {
			if err := writeConfig(n.Spec.PodCIDR); err != nil {
				return err
			}
			continue
		}
		via := n.internalIP()
		if via == "" || routed[n.Spec.PodCIDR] == via {
			continue
		}
		ip := exec.Command("/usr/bin/ip", "route", "replace", n.Spec.PodCIDR, "via", via)
		ip.SysProcAttr = &syscall.SysProcAttr{Chroot: host}
		out, err := ip.CombinedOutput()
		if err != nil {
			return fmt.Errorf("route %s via %s (node %s): %v: %s", n.Spec.PodCIDR, via, n.Metadata.Name, err, out)
		}
		routed[n.Spec.PodCIDR] = via
		log.Printf("routed %s via %s (node %s)", n.Spec.PodCIDR, via, n.Metadata.Name)
	}
	return nil
}

// writeConfig writes the node's CNI configuration if it differs: beside,
// then renamed, so that containerd never reads half a file.
func writeConfig(cidr string) error {
	want := []byte(fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "faultline",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "mtu": 1500,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/cni-ipam-state",
        "routes": [{"dst": "0.0.0.0/0"}],
        "ranges": [[{"subnet": %q}]]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, cidr))
	path := filepath.Join(host, confPath)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", want, 0o644); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	log.Printf("wrote %s for pod CIDR %s", confPath, cidr)
	return nil
}

// apiGet reads path from the API server with the pod's service account.
func apiGet(path string) ([]byte, error) {
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	endpoint := os.Getenv("CONTROL_PLANE_ENDPOINT")
	if endpoint == "" {
		endpoint = net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	}
	url := "https://" + endpoint + path
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body.String())
	}
	return body.Bytes(), nil
}
