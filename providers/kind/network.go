package kind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
)

// cniConfig is where each node's pod network is configured: faultline's
// stand-in for kindnetd, whose image no registry serves here. The node's
// filesystem outlives a restart, so the file is also the record of the
// node's pod CIDR when its API server is down.
const cniConfig = "/etc/cni/net.d/10-faultline.conflist"

// PodNetwork is a kind cluster's pod network without kindnetd: on each
// node a static CNI config (ptp and host-local over the Node's
// spec.podCIDR, which kube-controller-manager allocates) and a route to
// every other node's pod CIDR through that node's address.
type PodNetwork struct{ p *Provider }

// Network is the cluster's pod network.
func (p *Provider) Network() PodNetwork { return PodNetwork{p: p} }

// conflist is the CNI config of a node whose pods take addresses in cidr,
// as kindnetd writes it.
func conflist(cidr string) string {
	return fmt.Sprintf(`{
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
`, cidr)
}

// subnetOf reads the pod CIDR back from a conflist.
func subnetOf(raw []byte) string {
	var cfg struct {
		Plugins []struct {
			IPAM struct {
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if json.Unmarshal(raw, &cfg) != nil {
		return ""
	}
	for _, pl := range cfg.Plugins {
		for _, r := range pl.IPAM.Ranges {
			for _, s := range r {
				if s.Subnet != "" {
					return s.Subnet
				}
			}
		}
	}
	return ""
}

// ErrNoPodCIDR is returned by Ensure while a node has no pod CIDR yet
// (kube-controller-manager has not allocated it): retry.
var ErrNoPodCIDR = fmt.Errorf("a node has no pod CIDR yet")

// Ensure configures every running node on the kind network: a CNI config
// where there is none, and the routes to the other nodes' pod CIDRs.
// Idempotent; a node off the network (partitioned) or stopped is skipped,
// and gets its routes when it comes back.
func (n PodNetwork) Ensure(ctx context.Context) error {
	list, err := n.p.containers(ctx)
	if err != nil {
		return err
	}
	var nodes []nodeContainer
	for _, c := range list {
		if c.Role == "external-load-balancer" || c.State != "running" {
			continue
		}
		ip, err := n.p.address(ctx, c.Name)
		if err != nil {
			return err
		}
		if ip != "" {
			nodes = append(nodes, nodeContainer{Container: c.Name, Node: c.Name, IP: ip})
		}
	}
	return ensurePodNetwork(ctx, n.p.docker, n.p.c, nodes)
}

// nodeContainer is a running node's container on a docker network: its
// container's name, its Kubernetes Node's name, its address.
type nodeContainer struct{ Container, Node, IP string }

// ensurePodNetwork is faultline's stand-in for kindnetd on nodes: on each,
// a CNI config (ptp and host-local over the Node's spec.podCIDR, read
// through c, which kube-controller-manager allocates) where there is none,
// and a route to every other node's pod CIDR through that node's address.
// Idempotent.
func ensurePodNetwork(ctx context.Context, d Docker, c client.Client, nodes []nodeContainer) error {
	type node struct{ name, ip, cidr string }
	var configured []node
	for _, n := range nodes {
		raw, err := d.Run(ctx, "exec", n.Container, "cat", cniConfig)
		var de *DockerError
		if err != nil && !errors.As(err, &de) {
			return err
		}
		// A node with no config yet (cat failed) gets one below.
		cidr := subnetOf(raw)
		if cidr == "" {
			if cidr, err = podCIDR(ctx, c, n.Node); err != nil {
				return err
			}
			// Written beside, then renamed: containerd must not read half
			// a file.
			script := `set -e; mkdir -p "$(dirname "$1")"; printf '%s' "$2" >"$1.tmp"; mv "$1.tmp" "$1"`
			if _, err := d.Run(ctx, "exec", n.Container, "sh", "-c", script, "sh", cniConfig, conflist(cidr)); err != nil {
				return fmt.Errorf("write the CNI config of node %s: %w", n.Node, err)
			}
		}
		configured = append(configured, node{name: n.Container, ip: n.IP, cidr: cidr})
	}
	for _, from := range configured {
		args := []string{"exec", from.name, "sh", "-c", `while [ $# -gt 1 ]; do ip route replace "$1" via "$2"; shift 2; done`, "sh"}
		for _, to := range configured {
			if to.name != from.name {
				args = append(args, to.cidr, to.ip)
			}
		}
		if _, err := d.Run(ctx, args...); err != nil {
			return fmt.Errorf("route pod networks on node %s: %w", from.name, err)
		}
	}
	return nil
}

func podCIDR(ctx context.Context, c client.Client, name string) (string, error) {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return "", fmt.Errorf("read the pod CIDR of node %s: %w", name, err)
	}
	if node.Spec.PodCIDR == "" {
		return "", fmt.Errorf("node %s: %w", name, ErrNoPodCIDR)
	}
	if strings.Contains(node.Spec.PodCIDR, ":") {
		return "", fmt.Errorf("node %s: pod CIDR %s is IPv6; faultline's pod network is IPv4 only", name, node.Spec.PodCIDR)
	}
	return node.Spec.PodCIDR, nil
}

// NodeNetwork implements providers.Workloads: the kind network, which
// faultline creates (createNetwork) and every node container is on.
func (p *Provider) NodeNetwork(ctx context.Context, _ providers.Object) (netip.Prefix, error) {
	out, err := p.docker.Run(ctx, "network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", Network)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("read the kind network: %w", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if pfx, err := netip.ParsePrefix(f); err == nil && pfx.Addr().Is4() {
			return pfx, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("the kind network has no IPv4 subnet (docker network inspect said %q)", strings.TrimSpace(string(out)))
}
