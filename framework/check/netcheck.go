package check

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// Finding is one hazard a check found: seed 001's pool too small for its
// nodes is one.
type Finding struct {
	// ID names the rule, e.g. calico-pool-too-small.
	ID string `json:"id"`
	// Severity is error, warning or info.
	Severity string `json:"severity"`
	// Objects are the objects involved, as Kind/name.
	Objects []string `json:"objects"`
	// Message says what is wrong, with its arithmetic.
	Message string `json:"message"`
	// Fix says what to do about it.
	Fix string `json:"fix"`
}

// Calico's kinds when it keeps its state in the Kubernetes API.
const calicoAPIVersion = "crd.projectcalico.org/v1"

// CalicoNetwork is what the network check reads of a cluster.
type CalicoNetwork struct {
	// Pools are Calico IPPools, Affinities its BlockAffinities, Nodes the
	// cluster's Nodes, each as the API serves it.
	Pools, Affinities, Nodes []map[string]any
	// Surge is how many nodes a rolling upgrade adds at once, and
	// SurgeFrom the settings it comes from (see upgradeSurge).
	Surge     int
	SurgeFrom []string
	// ServiceCIDRs are the Cluster's service ranges
	// (spec.clusterNetwork.services.cidrBlocks).
	ServiceCIDRs []string
}

// ReadCalicoNetwork reads the IPPools, BlockAffinities and Nodes of the
// workload cluster of scope. A cluster without Calico's kinds has no
// pools.
func ReadCalicoNetwork(ctx context.Context, o providers.Objects, scope providers.Object) (CalicoNetwork, error) {
	var n CalicoNetwork
	var err error
	if n.Nodes, err = o.ListObjects(ctx, scope, providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Node"}); err != nil {
		return n, err
	}
	for _, l := range []struct {
		kind string
		into *[]map[string]any
	}{{"IPPool", &n.Pools}, {"BlockAffinity", &n.Affinities}} {
		*l.into, err = o.ListObjects(ctx, scope, providers.ObjectRef{Cluster: "workload", APIVersion: calicoAPIVersion, Kind: l.kind})
		if errors.Is(err, providers.ErrNotFound) {
			*l.into, err = nil, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// CheckCalicoPools finds seed 001's hazards: enabled IPPools that hold
// fewer blocks than there are nodes, a blockSize other than the nodes'
// pod CIDR prefix, and nodes that hold no block of their own. Each
// message shows its arithmetic.
func CheckCalicoPools(n CalicoNetwork) []Finding {
	var out []Finding
	nodes := make([]string, 0, len(n.Nodes))
	prefixes := map[int][]string{}
	for _, node := range n.Nodes {
		name := str(node, "metadata", "name")
		nodes = append(nodes, name)
		if p, err := netip.ParsePrefix(str(node, "spec", "podCIDR")); err == nil {
			prefixes[p.Bits()] = append(prefixes[p.Bits()], name)
		}
	}
	sort.Strings(nodes)
	blocks := new(big.Int)
	var poolNames []string
	for _, pool := range n.Pools {
		name := str(pool, "metadata", "name")
		if disabled, _ := field(pool, "spec", "disabled").(bool); disabled {
			continue
		}
		cidr, err := netip.ParsePrefix(str(pool, "spec", "cidr"))
		if err != nil {
			out = append(out, Finding{ID: "calico-pool-invalid", Severity: "error", Objects: []string{"IPPool/" + name},
				Message: fmt.Sprintf("IPPool %s: spec.cidr %q is not a CIDR", name, str(pool, "spec", "cidr")), Fix: "correct spec.cidr"})
			continue
		}
		size := blockSize(pool, cidr)
		if size < cidr.Bits() || size > cidr.Addr().BitLen() {
			out = append(out, Finding{ID: "calico-pool-invalid", Severity: "error", Objects: []string{"IPPool/" + name},
				Message: fmt.Sprintf("IPPool %s: blockSize %d does not fit in %s", name, size, cidr), Fix: "correct spec.blockSize"})
			continue
		}
		poolNames = append(poolNames, "IPPool/"+name)
		count := new(big.Int).Lsh(big.NewInt(1), uint(size-cidr.Bits()))
		blocks.Add(blocks, count)
		out = append(out, poolOverlaps(name, cidr, n)...)
		tooSmall := big.NewInt(int64(len(nodes))).Cmp(count) > 0
		if peak := big.NewInt(int64(len(nodes) + n.Surge)); !tooSmall && n.Surge > 0 && peak.Cmp(count) > 0 {
			out = append(out, Finding{ID: "calico-pool-too-small", Severity: "warning", Objects: []string{"IPPool/" + name},
				Message: fmt.Sprintf("IPPool %s: a /%d holds %s blocks of /%d (2^(%d-%d)): enough for the %d nodes now, not for the %s during a rolling upgrade (+%d: %s); the nodes beyond it get no block (seed 001)",
					name, cidr.Bits(), count, size, size, cidr.Bits(), len(nodes), peak, n.Surge, strings.Join(n.SurgeFrom, ", ")),
				Fix: fmt.Sprintf("before the upgrade, give the pool a CIDR of at least /%d, or set maxSurge 0 (the rollout then removes a Machine before it adds one)", size-bitsFor(len(nodes)+n.Surge))})
		}
		if tooSmall {
			out = append(out, Finding{ID: "calico-pool-too-small", Severity: "error", Objects: []string{"IPPool/" + name},
				Message: fmt.Sprintf("IPPool %s: a /%d holds %s blocks of /%d (2^(%d-%d)), fewer than the %d nodes: the nodes beyond it get no block of their own, and pods there get addresses borrowed from other nodes' blocks, which are routed to those nodes",
					name, cidr.Bits(), count, size, size, cidr.Bits(), len(nodes)),
				Fix: fmt.Sprintf("give the pool a CIDR of at least /%d for %d nodes, or a larger blockSize; Calico cannot change a pool's CIDR: create a new pool, disable this one, and recreate the pods (seed 001 redeployed the cluster with a larger range)", size-bitsFor(len(nodes)), len(nodes))})
		}
		for bits, names := range prefixes {
			if bits == size {
				continue
			}
			sort.Strings(names)
			// Calico's IPAM ignores Node.spec.podCIDR, so the mismatch alone
			// is common and harmless (Calico's /26 with kubeadm's /24); it
			// matters when the pool is short of blocks, as in seed 001.
			severity := "info"
			fix := "nothing while the pool has blocks to spare: Calico's IPAM does not use Node.spec.podCIDR"
			if tooSmall {
				severity = "warning"
				fix = fmt.Sprintf("make the pool's blockSize and kube-controller-manager's node-cidr-mask-size agree (seed 001: kubespray's calico_pool_blocksize %d overrode kube_network_node_prefix %d)", size, bits)
			}
			out = append(out, Finding{ID: "calico-blocksize-mismatch", Severity: severity, Objects: append([]string{"IPPool/" + name}, prefixed("Node/", names)...),
				Message: fmt.Sprintf("IPPool %s: blockSize %d differs from the node pod CIDR prefix %d (Node.spec.podCIDR of %s): a /%d node range is %s blocks of /%d",
					name, size, bits, strings.Join(names, ", "), bits, blockRatio(bits, size), size),
				Fix: fix})
		}
	}
	if len(poolNames) == 0 || len(n.Affinities) == 0 {
		return out
	}
	return append(out, nodesWithoutBlock(n, nodes, blocks, poolNames)...)
}

// nodesWithoutBlock finds the nodes no block affinity names, when the
// pools have blocks: pods there are not routed (seed 001).
func nodesWithoutBlock(n CalicoNetwork, nodes []string, blocks *big.Int, poolNames []string) []Finding {
	var out []Finding
	held := map[string]bool{}
	for _, a := range n.Affinities {
		if str(a, "spec", "state") != "pendingDeletion" {
			held[str(a, "spec", "node")] = true
		}
	}
	var without []string
	for _, name := range nodes {
		if !held[name] {
			without = append(without, name)
		}
	}
	if len(without) > 0 {
		out = append(out, Finding{ID: "calico-nodes-without-block", Severity: "error", Objects: prefixed("Node/", without),
			Message: fmt.Sprintf("%d of %d nodes hold no Calico block (%s): %s in all of %s, all taken",
				len(without), len(nodes), strings.Join(without, ", "), plural(blocks, "block"), strings.Join(poolNames, ", ")),
			Fix: "see calico-pool-too-small; until then keep webhooks and other API-server-called pods off these nodes"})
	}
	return out
}

// poolOverlaps finds a pool's CIDR overlapping the Cluster's service
// ranges or holding a node's own address: pod routes would then shadow
// Services or nodes.
func poolOverlaps(name string, cidr netip.Prefix, n CalicoNetwork) []Finding {
	var out []Finding
	for _, s := range n.ServiceCIDRs {
		if svc, err := netip.ParsePrefix(s); err == nil && svc.Overlaps(cidr) {
			out = append(out, Finding{ID: "calico-pool-overlap", Severity: "error", Objects: []string{"IPPool/" + name},
				Message: fmt.Sprintf("IPPool %s: %s overlaps the service range %s (Cluster spec.clusterNetwork.services.cidrBlocks)", name, cidr, svc),
				Fix:     "pods and Services must not share addresses: move the pool (new pool, disable this one, recreate the pods)"})
		}
	}
	var inside []string
	for _, node := range n.Nodes {
		list, _ := field(node, "status", "addresses").([]any)
		for _, a := range list {
			m, _ := a.(map[string]any)
			addr, err := netip.ParseAddr(fmt.Sprint(m["address"]))
			if t := m["type"]; err == nil && (t == "InternalIP" || t == "ExternalIP") && cidr.Contains(addr) {
				inside = append(inside, fmt.Sprintf("%s (%s)", str(node, "metadata", "name"), addr))
			}
		}
	}
	if len(inside) > 0 {
		sort.Strings(inside)
		out = append(out, Finding{ID: "calico-pool-overlap", Severity: "error", Objects: []string{"IPPool/" + name},
			Message: fmt.Sprintf("IPPool %s: %s holds the node addresses of %s: pod routes would shadow the node network", name, cidr, strings.Join(inside, ", ")),
			Fix:     "choose a pod network apart from the nodes' network (new pool, disable this one, recreate the pods)"})
	}
	return out
}

// blockSize is the pool's spec.blockSize, or Calico's default: 26 for
// IPv4, 122 for IPv6.
func blockSize(pool map[string]any, cidr netip.Prefix) int {
	if n, ok := number(field(pool, "spec", "blockSize")); ok {
		return n
	}
	if cidr.Addr().Is4() {
		return 26
	}
	return 122
}

// number reads an integer field as JSON (float64) or YAML (int64) decoding
// left it.
func number(v any) (int, bool) {
	switch t := v.(type) {
	case int64:
		return int(t), true
	case float64:
		return int(t), true
	case int:
		return t, true
	}
	return 0, false
}

// bitsFor is how many bits address n things.
func bitsFor(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

func blockRatio(nodeBits, size int) string {
	if size >= nodeBits {
		return new(big.Int).Lsh(big.NewInt(1), uint(size-nodeBits)).String()
	}
	return "1/" + new(big.Int).Lsh(big.NewInt(1), uint(nodeBits-size)).String()
}

func plural(n *big.Int, word string) string {
	if n.Cmp(big.NewInt(1)) == 0 {
		return "1 " + word
	}
	return n.String() + " " + word + "s"
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

// field reads a nested field of an object as the API serves it.
func field(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func str(obj map[string]any, path ...string) string {
	s, _ := field(obj, path...).(string)
	return s
}
