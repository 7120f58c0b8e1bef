package check

import (
	"strings"
	"testing"
)

func capiMachine(name string, controlPlane bool, etcdHealthy string, annotations map[string]any) map[string]any {
	l := map[string]any{"cluster.x-k8s.io/cluster-name": "c1"}
	if controlPlane {
		l["cluster.x-k8s.io/control-plane"] = ""
	}
	m := map[string]any{"metadata": map[string]any{"name": name, "labels": l, "annotations": annotations}}
	if etcdHealthy != "" {
		m["status"] = map[string]any{"conditions": []any{map[string]any{"type": "EtcdMemberHealthy", "status": etcdHealthy}}}
	}
	return m
}

func findingsByID(fs []Finding) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range fs {
		out[f.ID] = f
	}
	return out
}

// TestCheckRemediation: seed 003's control plane (no retry limit, a
// replacement recreated 819 times, no health check on the control plane)
// and a configured one.
func TestCheckRemediation(t *testing.T) {
	workers := map[string]any{"metadata": map[string]any{"name": "workers"}, "spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"cluster.x-k8s.io/deployment-name": "md-0"}},
		"checks":   map[string]any{"unhealthyNodeConditions": []any{map[string]any{"type": "Ready", "status": "Unknown", "timeoutSeconds": int64(300)}}},
	}}
	w := capiMachine("w1", false, "", nil)
	w["metadata"].(map[string]any)["labels"].(map[string]any)["cluster.x-k8s.io/deployment-name"] = "md-0"
	seed := ManagementState{
		MHCs: []map[string]any{workers},
		KCPs: []map[string]any{{"metadata": map[string]any{"name": "cp"}, "spec": map[string]any{}}},
		Machines: []map[string]any{w, capiMachine("cp-a", true, "True", nil),
			capiMachine("cp-new", true, "", map[string]any{"controlplane.cluster.x-k8s.io/remediation-for": `{"machine":"cp-old","timestamp":"2023-11-30T14:39:33Z","retryCount":819}`})},
	}
	got := findingsByID(CheckRemediation(seed))
	for id, want := range map[string]string{
		"mhc-coverage":                 "MachineHealthCheck workers covers 1 Machine (w1); node startup timeout 600s (default); unhealthy when Ready=Unknown for 300s; no limit",
		"control-plane-not-remediated": "no MachineHealthCheck covers cp-a, cp-new",
		"kcp-remediation-unbounded":    "KubeadmControlPlane cp retries remediation without limit",
		"remediation-loop":             "Machine cp-new is the 820th replacement of cp-old (remediation-for retryCount 819)",
	} {
		if !strings.Contains(got[id].Message, want) {
			t.Errorf("%s: %q, want it to contain %q", id, got[id].Message, want)
		}
	}
	if got["remediation-loop"].Severity != "error" || got["kcp-remediation-unbounded"].Severity != "warning" {
		t.Errorf("severities: %+v", got)
	}

	configured := seed
	configured.KCPs = []map[string]any{{"metadata": map[string]any{"name": "cp"}, "spec": map[string]any{"remediation": map[string]any{"maxRetry": int64(5)}}}}
	configured.Machines = seed.Machines[:2]
	for _, f := range CheckRemediation(configured) {
		if f.Severity != "info" {
			t.Errorf("a configured cluster: %s %s: %s", f.Severity, f.ID, f.Message)
		}
	}
}

// TestCheckEtcd: quorum margin and KCP's etcd condition.
func TestCheckEtcd(t *testing.T) {
	kcp := map[string]any{"metadata": map[string]any{"name": "cp"}}
	for _, tc := range []struct {
		name     string
		health   []string
		unhealth bool
		want     map[string]string
	}{
		{"3 healthy", []string{"True", "True", "True"}, false, nil},
		{"2 of 3", []string{"True", "True", "False"}, false, map[string]string{"etcd-quorum-margin": "2 of 3 etcd members healthy, quorum 2: losing one more member stops the API"}},
		{"1 of 3", []string{"True", "", "False"}, true, map[string]string{
			"etcd-quorum-margin": "1 of 3 etcd members healthy, quorum 2: below quorum: the API cannot store anything (seed 002); not healthy: m1, m2",
			"etcd-unhealthy":     "EtcdClusterHealthy is False (NotHealthy): etcd has no leader"}},
		{"single member", []string{"True"}, false, map[string]string{"etcd-quorum-margin": "a single etcd member, no margin by design"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := map[string]any{"metadata": kcp["metadata"]}
			if tc.unhealth {
				k["status"] = map[string]any{"conditions": []any{map[string]any{"type": "EtcdClusterHealthy", "status": "False", "reason": "NotHealthy", "message": "etcd has no leader"}}}
			}
			s := ManagementState{KCPs: []map[string]any{k}}
			for i, h := range tc.health {
				s.Machines = append(s.Machines, capiMachine("m"+string(rune('0'+i)), true, h, nil))
			}
			got := findingsByID(CheckEtcd(s))
			if len(got) != len(tc.want) {
				t.Fatalf("findings %+v, want %v", got, tc.want)
			}
			for id, want := range tc.want {
				if !strings.Contains(got[id].Message, want) {
					t.Errorf("%s: %q, want %q", id, got[id].Message, want)
				}
			}
			if tc.name == "single member" && got["etcd-quorum-margin"].Severity != "info" {
				t.Errorf("a single member is info, got %s", got["etcd-quorum-margin"].Severity)
			}
		})
	}
}

// TestCheckEtcdMembers: seed 003's control plane after its crash (a
// member of a deleted Machine still running, a new Machine stuck
// Provisioned, a node without its member) and a healthy one.
func TestCheckEtcdMembers(t *testing.T) {
	cp := func(name, node, phase string) map[string]any {
		m := capiMachine(name, true, "", nil)
		m["status"] = map[string]any{"phase": phase, "nodeRef": map[string]any{"name": node}}
		return m
	}
	etcdPod := func(node string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "etcd-" + node, "labels": map[string]any{"component": "etcd", "tier": "control-plane"}}, "spec": map[string]any{"nodeName": node}}
	}
	proxy := map[string]any{"metadata": map[string]any{"name": "kube-proxy-x", "labels": map[string]any{"k8s-app": "kube-proxy"}}, "spec": map[string]any{"nodeName": "n1"}}
	seed := ManagementState{Cluster: "ns/c1", Machines: []map[string]any{
		cp("cp-a", "n1", "Running"), cp("cp-b", "n2", "Running"), cp("cp-new", "", "Provisioned"), capiMachine("w1", false, "", nil),
	}}
	got := CheckEtcdMembers(seed, []map[string]any{etcdPod("n1"), etcdPod("n-old"), proxy})
	for i, want := range []string{
		"control-plane Machine cp-b: its node n2 runs no etcd member (no kube-system/etcd-n2)",
		"control-plane Machine cp-new is Provisioned (it has a VM) but no Node joined",
		"etcd members run on n-old, which no control-plane Machine of ns/c1 owns",
	} {
		if len(got) != 3 || !strings.Contains(got[i].Message, want) {
			t.Fatalf("findings %+v, want [%d] to contain %q", got, i, want)
		}
	}
	if got[2].Severity != "error" || got[0].Severity != "warning" {
		t.Errorf("severities %s %s", got[0].Severity, got[2].Severity)
	}
	healthy := ManagementState{Machines: seed.Machines[:2]}
	if got := CheckEtcdMembers(healthy, []map[string]any{etcdPod("n1"), etcdPod("n2")}); len(got) != 0 {
		t.Errorf("healthy: %+v", got)
	}
	if got := CheckEtcdMembers(seed, []map[string]any{proxy}); len(got) != 0 {
		t.Errorf("external etcd: %+v", got)
	}
}
