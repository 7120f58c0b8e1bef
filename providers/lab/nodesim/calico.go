package nodesim

import (
	"context"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"math/big"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
)

// Calico keeps its IPAM state in the Kubernetes API under this group when
// it uses the Kubernetes datastore, as on kubeadm clusters.
const calicoAPIVersion = "crd.projectcalico.org/v1"

// DefaultIPPool is the IPPool Calico creates at install from the pod
// network, with its default block size unless the cluster says otherwise.
const DefaultIPPool = "default-ipv4-ippool"

// allocatePodCIDR is kube-controller-manager's range allocator: the first
// subnet of the node mask size no Node holds, or "" when the pod network
// has none left (kube-controller-manager then reports CIDRNotAvailable).
func (s *Sim) allocatePodCIDR(ctx context.Context, c inmemoryclient.Client, cluster string) (string, error) {
	pod, nodeBits, _ := s.spec(cluster).PodNetwork()
	var nodes corev1.NodeList
	if err := workloadapi.ListInto(ctx, c, &nodes); err != nil {
		return "", err
	}
	used := map[string]bool{}
	for _, n := range nodes.Items {
		used[n.Spec.PodCIDR] = true
	}
	var free string
	subnets(pod, nodeBits, func(p netip.Prefix) bool {
		if !used[p.String()] {
			free = p.String()
			return false
		}
		return true
	})
	return free, nil
}

// subnets calls f with each subnet of bits in p, in order, until f says
// stop.
func subnets(p netip.Prefix, bits int, f func(netip.Prefix) bool) {
	if bits < p.Bits() || bits > p.Addr().BitLen() {
		return
	}
	base := new(big.Int).SetBytes(p.Masked().Addr().AsSlice())
	step := new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-bits))
	count := new(big.Int).Lsh(big.NewInt(1), uint(bits-p.Bits()))
	for i := new(big.Int); i.Cmp(count) < 0; i.Add(i, big.NewInt(1)) {
		n := new(big.Int).Add(base, new(big.Int).Mul(i, step))
		b := make([]byte, p.Addr().BitLen()/8)
		n.FillBytes(b)
		addr, _ := netip.AddrFromSlice(b)
		if !f(netip.PrefixFrom(addr, bits)) {
			return
		}
	}
}

// ensureCalicoPool creates the default IPPool, as Calico's install does:
// the whole pod network, in blocks of the cluster's block size.
func (s *Sim) ensureCalicoPool(ctx context.Context, c inmemoryclient.Client, cluster string) error {
	pod, _, blockBits := s.spec(cluster).PodNetwork()
	pool := calicoObject("IPPool", DefaultIPPool)
	pool.Object["spec"] = map[string]any{
		"cidr": pod.String(), "blockSize": int64(blockBits), "ipipMode": "Never", "vxlanMode": "Always",
		"natOutgoing": true, "nodeSelector": "all()", "allowedUses": []any{"Workload", "Tunnel"},
	}
	return createIfMissing(ctx, c, pool)
}

func calicoObject(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(calicoAPIVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func listCalico(ctx context.Context, c inmemoryclient.Client, kind string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(calicoAPIVersion)
	list.SetKind(kind + "List")
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	return list.Items, nil
}

// reconcileCalicoIPAM plays Calico's IPAM: each Node, in the order the
// Nodes joined, claims a free block of an enabled IPPool (a
// BlockAffinity); a Node beyond the pools' capacity gets none, and its
// pods borrow addresses from other nodes' blocks, whose routes lead to
// those nodes (seed 001). Affinities of deleted Nodes are released.
func (s *Sim) reconcileCalicoIPAM(ctx context.Context, c inmemoryclient.Client) error {
	pools, err := listCalico(ctx, c, "IPPool")
	if err != nil {
		return err
	}
	affs, err := listCalico(ctx, c, "BlockAffinity")
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := workloadapi.ListInto(ctx, c, &nodes); err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, n := range nodes.Items {
		exists[n.Name] = true
	}
	taken, held := map[string]bool{}, map[string]bool{}
	for i := range affs {
		a := &affs[i]
		node, _, _ := unstructured.NestedString(a.Object, "spec", "node")
		cidr, _, _ := unstructured.NestedString(a.Object, "spec", "cidr")
		if !exists[node] {
			if err := c.Delete(ctx, a); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("release block %s of node %s: %w", cidr, node, err)
			}
			continue
		}
		taken[cidr], held[node] = true, true
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return joinedBefore(&nodes.Items[i], &nodes.Items[j]) })
	for _, n := range nodes.Items {
		if held[n.Name] {
			continue
		}
		block := freeBlock(pools, taken)
		if block == "" {
			return nil // no block left for this node nor the ones after it
		}
		a := calicoObject("BlockAffinity", n.Name+"-"+strings.NewReplacer(".", "-", "/", "-", ":", "-").Replace(block))
		a.Object["spec"] = map[string]any{"node": n.Name, "cidr": block, "state": "confirmed", "deleted": "false"}
		if err := createIfMissing(ctx, c, a); err != nil {
			return err
		}
		taken[block] = true
	}
	return nil
}

// freeBlock is the first block of an enabled pool no node holds.
func freeBlock(pools []unstructured.Unstructured, taken map[string]bool) string {
	sort.Slice(pools, func(i, j int) bool { return pools[i].GetName() < pools[j].GetName() })
	for _, pool := range pools {
		if disabled, _, _ := unstructured.NestedBool(pool.Object, "spec", "disabled"); disabled {
			continue
		}
		text, _, _ := unstructured.NestedString(pool.Object, "spec", "cidr")
		cidr, err := netip.ParsePrefix(text)
		if err != nil {
			continue
		}
		size, ok, _ := unstructured.NestedInt64(pool.Object, "spec", "blockSize")
		if !ok {
			size = 26
		}
		var free string
		subnets(cidr, int(size), func(p netip.Prefix) bool {
			if !taken[p.String()] {
				free = p.String()
				return false
			}
			return true
		})
		if free != "" {
			return free
		}
	}
	return ""
}

// nodeHasBlock tells whether pods on node are routed: there is no IPPool
// (Calico does not do the cluster's IPAM), or node holds a block.
func nodeHasBlock(ctx context.Context, c inmemoryclient.Client, node string) (bool, error) {
	pools, err := listCalico(ctx, c, "IPPool")
	if err != nil || len(pools) == 0 {
		return true, err
	}
	affs, err := listCalico(ctx, c, "BlockAffinity")
	if err != nil {
		return false, err
	}
	for _, a := range affs {
		if n, _, _ := unstructured.NestedString(a.Object, "spec", "node"); n == node {
			return true, nil
		}
	}
	return false, nil
}

// recordCIDRNotAvailable is kube-controller-manager's Event for a Node it
// has no pod CIDR for.
func recordCIDRNotAvailable(ctx context.Context, c inmemoryclient.Client, node string) error {
	now := metav1.Now()
	return createIfMissing(ctx, c, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: node + ".cidrnotavailable"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node, UID: "", APIVersion: "v1"},
		Reason:         "CIDRNotAvailable", Type: corev1.EventTypeNormal,
		Message:        fmt.Sprintf("Node %s status is now: CIDRNotAvailable", node),
		Source:         corev1.EventSource{Component: "cidrAllocator"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	})
}

// ipamResync is how often Calico's IPAM is played for a cluster whose
// nodes did not change (an IPPool edited): every tick, it was the
// simulator's largest cost in a lab of 20 clusters.
const ipamResync = time.Second

// members is, by cluster, its VMs and whether each has booted (its Node
// registered), in one string: what ipamDue compares.
func (s *Sim) members() map[string]string {
	names := map[string][]string{}
	for name, vm := range s.vms {
		names[vm.cluster] = append(names[vm.cluster], fmt.Sprintf("%s/%t", name, vm.booted))
	}
	out := make(map[string]string, len(names))
	for cluster, n := range names {
		slices.Sort(n)
		out[cluster] = strings.Join(n, ",")
	}
	return out
}

// ipamDue tells whether the cluster's IPAM is to be played this tick: its
// members (see members) changed, or ipamResync passed.
func (s *Sim) ipamDue(cluster, nodes string, now time.Time) bool {
	last := s.ipam[cluster]
	if last.nodes == nodes && now.Sub(last.at) < ipamResync {
		return false
	}
	s.ipam[cluster] = ipamRun{nodes: nodes, at: now}
	return true
}

// ipamRun is when Calico's IPAM was last played for a cluster, and for
// which nodes.
type ipamRun struct {
	nodes string
	at    time.Time
}
