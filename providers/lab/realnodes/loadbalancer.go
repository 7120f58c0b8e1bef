package realnodes

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// LoadBalancerImage is kind's load balancer image
// (sigs.k8s.io/kind/pkg/cluster/internal/loadbalancer.Image), which
// hack/kind-image.sh builds offline from faultline's stand-in for Envoy.
const LoadBalancerImage = "docker.io/envoyproxy/envoy:v1.36.2"

// The files of the load balancer's configuration, where kind writes them.
const (
	lbDir = "/home/envoy"
	lbCDS = lbDir + "/cds.yaml"
	lbLDS = lbDir + "/lds.yaml"
)

// lbBootstrap is Envoy's bootstrap configuration as kind writes it
// (loadbalancer.DynamicFilesystemConfigTemplate): clusters and listeners
// read from files, which SetBackends rewrites.
const lbBootstrap = `node:
  cluster: %s
  id: %s
dynamic_resources:
  cds_config:
    resource_api_version: V3
    path_config_source:
      path: ` + lbCDS + `
  lds_config:
    resource_api_version: V3
    path_config_source:
      path: ` + lbLDS + `
`

// lbStart writes the bootstrap configuration ($1) and empty clusters and
// listeners, then runs the proxy, as kind's GenerateBootstrapCommand does.
const lbStart = `mkdir -p ` + lbDir + ` && printf '%s' "$1" > ` + lbDir + `/envoy.yaml && printf 'resources: []' > ` + lbCDS +
	` && printf 'resources: []' > ` + lbLDS + ` && while true; do envoy -c ` + lbDir + `/envoy.yaml && break; sleep 1; done`

// StartLoadBalancer starts the lab's control-plane endpoint: kind's load
// balancer at the network's last address, recorded first, listening on
// port. Its address is known before any Machine exists, as KCP needs;
// SetBackends says where it sends connections.
func (d *Driver) StartLoadBalancer(ctx context.Context, port int) (string, error) {
	c := Container{Name: d.cfg.Lab + "-lb", IP: lastHost(d.subnet).String()}
	d.mu.Lock()
	d.state.LoadBalancer = &c
	err := d.saveLocked()
	d.mu.Unlock()
	if err != nil {
		return "", err
	}
	if err := d.docker(ctx, "run", "--detach", "--name", c.Name, "--hostname", c.Name,
		"--label", Label+"="+d.cfg.Lab, "--net", d.cfg.Lab, "--ip", c.IP, "--restart=no",
		"--entrypoint", "bash", LoadBalancerImage, "-c", lbStart, "lb", fmt.Sprintf(lbBootstrap, d.cfg.Lab, c.Name)); err != nil {
		return "", fmt.Errorf("start the lab's load balancer: %w", err)
	}
	lds := fmt.Sprintf(`resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: listener_apiserver
  address:
    socket_address:
      address: "0.0.0.0"
      port_value: %d
  filter_chains:
  - filters:
    - name: envoy.filters.network.tcp_proxy
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
        stat_prefix: ingress_tcp
        cluster: kube_apiservers
`, port)
	if err := d.writeFile(ctx, c.Name, WriteFile{Path: lbLDS, Content: lds}); err != nil {
		return "", err
	}
	return c.IP, nil
}

// SetBackends sends the load balancer's connections to the API servers at
// backends (host:port), healthy ones first, as kind's Envoy does.
func (d *Driver) SetBackends(ctx context.Context, backends []string) error {
	d.mu.Lock()
	lb := d.state.LoadBalancer
	d.mu.Unlock()
	if lb == nil {
		return fmt.Errorf("the lab has no load balancer")
	}
	sorted := append([]string(nil), backends...)
	sort.Strings(sorted)
	var b strings.Builder
	b.WriteString(`resources:
- "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
  name: kube_apiservers
  connect_timeout: 0.25s
  type: STRICT_DNS
  lb_policy: ROUND_ROBIN
  health_checks:
  - timeout: 3s
    interval: 2s
    unhealthy_threshold: 2
    healthy_threshold: 1
    http_health_check:
      path: /healthz
  load_assignment:
    cluster_name: kube_apiservers
    endpoints:
    - lb_endpoints:
`)
	for _, s := range sorted {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return fmt.Errorf("backend %q: %w", s, err)
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("backend %q: expected an IP address: %w", s, err)
		}
		if _, err := strconv.Atoi(port); err != nil {
			return fmt.Errorf("backend %q: %w", s, err)
		}
		fmt.Fprintf(&b, "      - endpoint:\n          address:\n            socket_address:\n              address: %s\n              port_value: %s\n", host, port)
	}
	return d.writeFile(ctx, lb.Name, WriteFile{Path: lbCDS, Content: b.String()})
}

// lastHost is the last address of an IPv4 prefix before its broadcast
// address.
func lastHost(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	n += 1<<(32-p.Bits()) - 2
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}
