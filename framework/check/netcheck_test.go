package check

import (
	"fmt"
	"strings"
	"testing"
)

func calicoPool(name, cidr string, blockSize int, disabled bool) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{"cidr": cidr, "blockSize": int64(blockSize), "disabled": disabled}}
}

func calicoNodes(n int, podCIDR func(i int) string) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		spec := map[string]any{}
		if c := podCIDR(i); c != "" {
			spec["podCIDR"] = c
		}
		out[i] = map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("node-%d", i)}, "spec": spec}
	}
	return out
}

func affinities(nodes ...int) []map[string]any {
	out := make([]map[string]any, len(nodes))
	for i, n := range nodes {
		out[i] = map[string]any{"spec": map[string]any{"node": fmt.Sprintf("node-%d", n), "state": "confirmed"}}
	}
	return out
}

func findingIDs(fs []Finding) string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	return strings.Join(ids, ",")
}

// TestCheckCalicoPools: seed 001's cluster (a /24 pool of /26 blocks, /25
// node ranges, 7 nodes) fires every rule with its arithmetic; a pool that
// fits does not.
func TestCheckCalicoPools(t *testing.T) {
	seed := CalicoNetwork{
		Pools: []map[string]any{calicoPool("default-pool", "10.202.146.0/24", 26, false)},
		Nodes: calicoNodes(7, func(i int) string {
			if i < 2 {
				return fmt.Sprintf("10.202.146.%d/25", 128*i)
			}
			return "" // kube-controller-manager ran out of /25s
		}),
		Affinities: affinities(0, 1, 2, 3),
	}
	got := CheckCalicoPools(seed)
	if ids := findingIDs(got); ids != "calico-pool-too-small,calico-blocksize-mismatch,calico-nodes-without-block" {
		t.Fatalf("findings %s, want too-small, mismatch, without-block: %+v", ids, got)
	}
	for i, want := range []string{
		"IPPool default-pool: a /24 holds 4 blocks of /26 (2^(26-24)), fewer than the 7 nodes",
		"IPPool default-pool: blockSize 26 differs from the node pod CIDR prefix 25 (Node.spec.podCIDR of node-0, node-1): a /25 node range is 2 blocks of /26",
		"3 of 7 nodes hold no Calico block (node-4, node-5, node-6): 4 blocks in all of IPPool/default-pool, all taken",
	} {
		if !strings.Contains(got[i].Message, want) {
			t.Errorf("finding %s: %q, want it to contain %q", got[i].ID, got[i].Message, want)
		}
	}
	if !strings.Contains(got[0].Fix, "at least /23 for 7 nodes") {
		t.Errorf("fix %q, want the CIDR that fits", got[0].Fix)
	}

	if got[1].Severity != "warning" {
		t.Errorf("mismatch with a pool too small: severity %s, want warning", got[1].Severity)
	}

	healthy := CalicoNetwork{
		Pools:      []map[string]any{calicoPool("default-ipv4-ippool", "192.168.0.0/16", 26, false), calicoPool("old", "10.0.0.0/30", 31, true)},
		Nodes:      calicoNodes(7, func(i int) string { return fmt.Sprintf("192.168.%d.0/26", i) }),
		Affinities: affinities(0, 1, 2, 3, 4, 5, 6),
	}
	if got := CheckCalicoPools(healthy); len(got) != 0 {
		t.Errorf("a fitting pool: %+v, want no finding", got)
	}
	// Calico's default blocks in kubeadm's default node ranges.
	defaults := healthy
	defaults.Nodes = calicoNodes(7, func(i int) string { return fmt.Sprintf("192.168.%d.0/24", i) })
	if got := CheckCalicoPools(defaults); len(got) != 1 || got[0].ID != "calico-blocksize-mismatch" || got[0].Severity != "info" {
		t.Errorf("/26 blocks in /24 node ranges: %+v, want one info finding", got)
	}
	if got := CheckCalicoPools(CalicoNetwork{Nodes: healthy.Nodes}); len(got) != 0 {
		t.Errorf("no Calico: %+v, want no finding", got)
	}
	bad := CalicoNetwork{Pools: []map[string]any{calicoPool("p", "10.0.0.0/24", 20, false), calicoPool("q", "nonsense", 26, false)}}
	if ids := findingIDs(CheckCalicoPools(bad)); ids != "calico-pool-invalid,calico-pool-invalid" {
		t.Errorf("invalid pools: %s", ids)
	}
}

// TestCheckCalicoPoolsUpgrade: a pool that fits the nodes of today but
// not the surge of a rolling upgrade is a warning with the settings it
// comes from; a pool over the service range or the nodes' addresses is an
// error.
func TestCheckCalicoPoolsUpgrade(t *testing.T) {
	n := CalicoNetwork{
		Pools:      []map[string]any{calicoPool("default-pool", "10.202.146.0/24", 26, false)},
		Nodes:      calicoNodes(3, func(int) string { return "" }),
		Affinities: affinities(0, 1, 2),
	}
	s := ManagementState{
		KCPs: []map[string]any{{"metadata": map[string]any{"name": "cp"}}},
		MDs: []map[string]any{
			{"metadata": map[string]any{"name": "md-0"}, "spec": map[string]any{"replicas": int64(4), "rollout": map[string]any{"strategy": map[string]any{"rollingUpdate": map[string]any{"maxSurge": "50%"}}}}},
			{"metadata": map[string]any{"name": "md-1"}, "spec": map[string]any{"replicas": int64(2), "rollout": map[string]any{"strategy": map[string]any{"type": "OnDelete"}}}},
		},
	}
	n.Surge, n.SurgeFrom = upgradeSurge(s)
	got := CheckCalicoPools(n)
	want := "IPPool default-pool: a /24 holds 4 blocks of /26 (2^(26-24)): enough for the 3 nodes now, not for the 5 during a rolling upgrade (+2: MachineDeployment md-0 maxSurge 2)"
	if len(got) != 1 || got[0].ID != "calico-pool-too-small" || got[0].Severity != "warning" || !strings.Contains(got[0].Message, want) {
		t.Fatalf("findings %+v, want one warning containing %q", got, want)
	}
	if !strings.Contains(got[0].Fix, "at least /23") {
		t.Errorf("fix %q, want the CIDR that fits 5 nodes", got[0].Fix)
	}
	// maxSurge 0 everywhere: the rollout removes before it adds.
	s.KCPs[0]["spec"] = map[string]any{"rollout": map[string]any{"strategy": map[string]any{"rollingUpdate": map[string]any{"maxSurge": int64(0)}}}}
	s.MDs = s.MDs[1:]
	if n.Surge, n.SurgeFrom = upgradeSurge(s); n.Surge != 0 || len(CheckCalicoPools(n)) != 0 {
		t.Errorf("no surge: %d (%v), findings %+v", n.Surge, n.SurgeFrom, CheckCalicoPools(n))
	}

	n.ServiceCIDRs = []string{"10.202.146.128/25"}
	n.Nodes[1]["status"] = map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": "10.202.146.7"}, map[string]any{"type": "Hostname", "address": "node-1"}}}
	got = CheckCalicoPools(n)
	if ids := findingIDs(got); ids != "calico-pool-overlap,calico-pool-overlap" {
		t.Fatalf("findings %s, want two overlaps: %+v", ids, got)
	}
	for i, want := range []string{
		"IPPool default-pool: 10.202.146.0/24 overlaps the service range 10.202.146.128/25",
		"IPPool default-pool: 10.202.146.0/24 holds the node addresses of node-1 (10.202.146.7)",
	} {
		if !strings.Contains(got[i].Message, want) {
			t.Errorf("%q, want it to contain %q", got[i].Message, want)
		}
	}
}

func TestKubeadmServiceSubnets(t *testing.T) {
	for config, want := range map[string]string{
		"apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 10.96.0.0/16\n": "10.96.0.0/16",
		"networking:\n  serviceSubnet: 10.96.0.0/16,fd00:10:96::/112\n":                                                                            "10.96.0.0/16 fd00:10:96::/112",
		"networking: {}\n": "",
		"":                 "",
		"networking: [":    "",
	} {
		if got := strings.Join(kubeadmServiceSubnets(config), " "); got != want {
			t.Errorf("%q: %q, want %q", config, got, want)
		}
	}
}
