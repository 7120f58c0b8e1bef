package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/faultline-dev/faultline/providers"
)

const capiAPIVersion = "cluster.x-k8s.io/v1beta2"

// ManagementState is what the remediation and etcd checks read of one
// Cluster in the management cluster: its MachineHealthChecks,
// KubeadmControlPlanes and Machines, as the API serves them.
type ManagementState struct {
	Cluster                   string
	MHCs, KCPs, Machines, MDs []map[string]any
	// AllMachines and VSphereVMs are every Cluster's, in every namespace
	// (readOwners): a VM is the Cluster's whose Machine owns it, through
	// its VSphereVM and VSphereMachine, whatever its name.
	AllMachines, VSphereVMs []map[string]any
	// ClusterObject is the Cluster itself; nil if it cannot be read.
	ClusterObject map[string]any
}

// ReadManagementState reads the objects of the Cluster scope belongs to.
func ReadManagementState(ctx context.Context, o providers.Objects, scope providers.Object) (ManagementState, error) {
	ns, cluster := scope.Attributes[providers.AttrNamespace], scope.Attributes[providers.AttrCluster]
	s := ManagementState{Cluster: ns + "/" + cluster}
	for _, l := range []struct {
		apiVersion, kind string
		into             *[]map[string]any
	}{
		{capiAPIVersion, "MachineHealthCheck", &s.MHCs},
		{"controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", &s.KCPs},
		{capiAPIVersion, "Machine", &s.Machines},
		{capiAPIVersion, "MachineDeployment", &s.MDs},
	} {
		all, err := o.ListObjects(ctx, scope, providers.ObjectRef{Cluster: "management", APIVersion: l.apiVersion, Kind: l.kind, Namespace: ns})
		if err != nil {
			return s, err
		}
		for _, obj := range all {
			if stringMap(field(obj, "metadata", "labels"))["cluster.x-k8s.io/cluster-name"] == cluster || str(obj, "spec", "clusterName") == cluster {
				*l.into = append(*l.into, obj)
			}
		}
	}
	c, err := o.GetObject(ctx, scope, providers.ObjectRef{Cluster: "management", APIVersion: capiAPIVersion, Kind: "Cluster", Namespace: ns, Name: cluster})
	s.ClusterObject = c
	return s, err
}

// upgradeSurge is how many Machines a rolling upgrade of s adds at once,
// and where that comes from: the control plane rolls first, with KCP's
// maxSurge (default 1); then the MachineDeployments, which may roll
// together, each with its maxSurge (default 1, a percentage of its
// replicas rounded up; none with the OnDelete strategy).
func upgradeSurge(s ManagementState) (int, []string) {
	kcp, md := 0, 0
	var kcpFrom, mdFrom []string
	for _, k := range s.KCPs {
		n := scaledSurge(field(k, "spec", "rollout", "strategy", "rollingUpdate", "maxSurge"), 1)
		kcp += n
		kcpFrom = append(kcpFrom, fmt.Sprintf("KubeadmControlPlane %s maxSurge %d", str(k, "metadata", "name"), n))
	}
	for _, d := range s.MDs {
		if str(d, "spec", "rollout", "strategy", "type") == "OnDelete" {
			continue
		}
		replicas, ok := number(field(d, "spec", "replicas"))
		if !ok {
			replicas = 1
		}
		n := scaledSurge(field(d, "spec", "rollout", "strategy", "rollingUpdate", "maxSurge"), replicas)
		md += n
		mdFrom = append(mdFrom, fmt.Sprintf("MachineDeployment %s maxSurge %d", str(d, "metadata", "name"), n))
	}
	if kcp > md {
		return kcp, kcpFrom
	}
	return md, mdFrom
}

// scaledSurge reads a maxSurge (an integer or a percentage of replicas,
// rounded up as Cluster API does); absent, it is 1.
func scaledSurge(v any, replicas int) int {
	var is intstr.IntOrString
	if t, ok := v.(string); ok {
		is = intstr.FromString(t)
	} else if n, ok := number(v); ok {
		is = intstr.FromInt32(int32(n))
	} else {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&is, replicas, true)
	if err != nil || n < 0 {
		return 1
	}
	return n
}

// CheckRemediation reports what the health checks and KCP will and will
// not do: KCP remediation without a retry limit (seed 003: a Machine
// recreated 819 times), a recreation loop in progress, control-plane
// Machines no health check covers (seed 002: a control plane whose kubelet
// stopped is never replaced), and each health check's coverage.
func CheckRemediation(s ManagementState) []Finding {
	var out []Finding
	covered := map[string]bool{}
	for _, mhc := range s.MHCs {
		name := str(mhc, "metadata", "name")
		sel, err := metav1.LabelSelectorAsSelector(labelSelector(field(mhc, "spec", "selector")))
		if err != nil {
			continue
		}
		var names []string
		for _, m := range s.Machines {
			if sel.Matches(labels.Set(stringMap(field(m, "metadata", "labels")))) {
				mn := str(m, "metadata", "name")
				names = append(names, mn)
				covered[mn] = true
			}
		}
		sort.Strings(names)
		limit := "no limit on how many may be unhealthy at once"
		if v := field(mhc, "spec", "remediation", "triggerIf", "unhealthyLessThanOrEqualTo"); v != nil {
			limit = fmt.Sprintf("remediates while at most %v are unhealthy", v)
		} else if r := str(mhc, "spec", "remediation", "triggerIf", "unhealthyInRange"); r != "" {
			limit = "remediates while the unhealthy count is in " + r
		}
		startup := "600s (default)"
		if v := field(mhc, "spec", "checks", "nodeStartupTimeoutSeconds"); v != nil {
			startup = fmt.Sprintf("%vs", v)
		}
		var conds []string
		list, _ := field(mhc, "spec", "checks", "unhealthyNodeConditions").([]any)
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				conds = append(conds, fmt.Sprintf("%v=%v for %vs", m["type"], m["status"], m["timeoutSeconds"]))
			}
		}
		out = append(out, Finding{ID: "mhc-coverage", Severity: "info", Objects: []string{"MachineHealthCheck/" + name},
			Message: fmt.Sprintf("MachineHealthCheck %s covers %s (%s); node startup timeout %s; unhealthy when %s; %s",
				name, plural(big.NewInt(int64(len(names))), "Machine"), strings.Join(names, ", "), startup, orNone(conds), limit),
			Fix: "nothing, if that is what the upgrade should expect"})
	}
	for _, kcp := range s.KCPs {
		name := str(kcp, "metadata", "name")
		var uncovered []string
		for _, m := range s.Machines {
			mn := str(m, "metadata", "name")
			if _, cp := stringMap(field(m, "metadata", "labels"))["cluster.x-k8s.io/control-plane"]; cp && !covered[mn] {
				uncovered = append(uncovered, mn)
			}
		}
		if len(uncovered) > 0 {
			sort.Strings(uncovered)
			out = append(out, Finding{ID: "control-plane-not-remediated", Severity: "info", Objects: prefixed("Machine/", uncovered),
				Message: fmt.Sprintf("KubeadmControlPlane %s: no MachineHealthCheck covers %s, so KCP never remediates them (seed 002: a control plane whose kubelet stopped stays NotReady)", name, strings.Join(uncovered, ", ")),
				Fix:     "add a MachineHealthCheck selecting cluster.x-k8s.io/control-plane if KCP should replace failed control planes"})
		}
		if field(kcp, "spec", "remediation", "maxRetry") == nil {
			out = append(out, Finding{ID: "kcp-remediation-unbounded", Severity: "warning", Objects: []string{"KubeadmControlPlane/" + name},
				Message: fmt.Sprintf("KubeadmControlPlane %s retries remediation without limit (spec.remediation.maxRetry unset): a replacement that cannot join is recreated forever (seed 003: retryCount 819)", name),
				Fix:     "set spec.remediation.maxRetry (e.g. 5) and retryPeriodSeconds, so a loop stops and asks for a person"})
		}
	}
	for _, m := range s.Machines {
		anno := stringMap(field(m, "metadata", "annotations"))["controlplane.cluster.x-k8s.io/remediation-for"]
		if anno == "" {
			continue
		}
		var rf struct {
			Machine    string `json:"machine"`
			RetryCount int    `json:"retryCount"`
		}
		if err := json.Unmarshal([]byte(anno), &rf); err != nil || rf.RetryCount < 3 {
			continue
		}
		mn := str(m, "metadata", "name")
		out = append(out, Finding{ID: "remediation-loop", Severity: "error", Objects: []string{"Machine/" + mn},
			Message: fmt.Sprintf("Machine %s is the %s replacement of %s (remediation-for retryCount %d): KCP keeps recreating a control plane that does not come up (seed 003)", mn, ordinal(rf.RetryCount+1), rf.Machine, rf.RetryCount),
			Fix:     "find why the new Machine stays Provisioned before upgrading: etcd health (seed 003's leader had to be moved with etcdctl move-leader), kubeadm join on the node"})
	}
	return out
}

// CheckEtcd reports KCP's view of etcd: the cluster unhealthy, and the
// quorum margin (how many more members it can lose and keep serving).
func CheckEtcd(s ManagementState) []Finding {
	var out []Finding
	for _, kcp := range s.KCPs {
		name := str(kcp, "metadata", "name")
		if c := Condition(kcp, "EtcdClusterHealthy"); c != nil && c["status"] == "False" {
			out = append(out, Finding{ID: "etcd-unhealthy", Severity: "error", Objects: []string{"KubeadmControlPlane/" + name},
				Message: fmt.Sprintf("KubeadmControlPlane %s: EtcdClusterHealthy is False (%v): %v", name, c["reason"], c["message"]),
				Fix:     "restore etcd before any rollout: an upgrade replaces members one at a time and needs quorum throughout"})
		}
		var total, healthy int
		var sick []string
		for _, m := range s.Machines {
			if _, cp := stringMap(field(m, "metadata", "labels"))["cluster.x-k8s.io/control-plane"]; !cp {
				continue
			}
			total++
			if c := Condition(m, "EtcdMemberHealthy"); c != nil && c["status"] == "True" {
				healthy++
			} else {
				sick = append(sick, str(m, "metadata", "name"))
			}
		}
		if total == 0 {
			continue
		}
		quorum := total/2 + 1
		if margin := healthy - quorum; margin < 1 {
			if total == 1 && healthy == 1 {
				out = append(out, Finding{ID: "etcd-quorum-margin", Severity: "info", Objects: []string{"KubeadmControlPlane/" + name},
					Message: fmt.Sprintf("KubeadmControlPlane %s: a single etcd member, no margin by design: losing its node stops the API", name),
					Fix:     "run three control planes where the API must survive the loss of a node"})
				continue
			}
			sort.Strings(sick)
			out = append(out, Finding{ID: "etcd-quorum-margin", Severity: "warning", Objects: append([]string{"KubeadmControlPlane/" + name}, prefixed("Machine/", sick)...),
				Message: fmt.Sprintf("KubeadmControlPlane %s: %d of %d etcd members healthy, quorum %d: %s (seed 002); not healthy: %s",
					name, healthy, total, quorum, marginText(margin), orNone(sick)),
				Fix: "bring the members back before an upgrade: a rollout takes one member down at a time"})
		}
	}
	return out
}

// Condition returns the condition of type t in obj's status.conditions, or
// nil.
func Condition(obj map[string]any, t string) map[string]any {
	list, _ := field(obj, "status", "conditions").([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

func marginText(margin int) string {
	if margin == 0 {
		return "losing one more member stops the API"
	}
	return "below quorum: the API cannot store anything"
}

// CheckEtcdMembers pairs etcd members with control-plane Machines, as
// far as a reader can see them: kubeadm runs each member as the static pod
// etcd-<node> in kube-system (the member list itself needs etcdctl, which
// is not a read of the API). A member on a node no Machine owns still
// counts towards quorum while nothing manages it; a Machine whose node
// runs no member, or that never got a Node (seed 003's new control plane,
// stuck Provisioned), is out of step. Without etcd static pods (external
// etcd) there is nothing to pair.
func CheckEtcdMembers(s ManagementState, kubeSystemPods []map[string]any) []Finding {
	members := map[string]bool{}
	for _, p := range kubeSystemPods {
		l := stringMap(field(p, "metadata", "labels"))
		if l["component"] == "etcd" && l["tier"] == "control-plane" && field(p, "metadata", "deletionTimestamp") == nil {
			members[str(p, "spec", "nodeName")] = true
		}
	}
	if len(members) == 0 {
		return nil
	}
	var out []Finding
	owned := map[string]bool{}
	for _, m := range s.Machines {
		if !liveControlPlane(m) {
			continue
		}
		name, node := str(m, "metadata", "name"), str(m, "status", "nodeRef", "name")
		owned[node] = true
		switch {
		case node == "" && str(m, "status", "phase") == "Provisioned":
			out = append(out, Finding{ID: "etcd-member-mismatch", Severity: "warning", Objects: []string{"Machine/" + name},
				Message: fmt.Sprintf("control-plane Machine %s is Provisioned (it has a VM) but no Node joined: its etcd member was never added (seed 003: the etcd leader could not reach its peers)", name),
				Fix:     "on a healthy control-plane node, check etcd (etcdctl endpoint status --cluster; seed 003 moved the leader with etcdctl move-leader) before the upgrade adds more members"})
		case node != "" && !members[node]:
			out = append(out, Finding{ID: "etcd-member-mismatch", Severity: "warning", Objects: []string{"Machine/" + name},
				Message: fmt.Sprintf("control-plane Machine %s: its node %s runs no etcd member (no kube-system/etcd-%s)", name, node, node),
				Fix:     "find why the member is not running on the node (kubelet, /etc/kubernetes/manifests/etcd.yaml) before the upgrade replaces members"})
		}
	}
	var strays []string
	for node := range members {
		if !owned[node] {
			strays = append(strays, node)
		}
	}
	if len(strays) > 0 {
		sort.Strings(strays)
		out = append(out, Finding{ID: "etcd-member-mismatch", Severity: "error", Objects: prefixed("Node/", strays),
			Message: fmt.Sprintf("etcd members run on %s, which no control-plane Machine of %s owns: they count towards quorum but nothing manages them (a member of a Machine that was deleted without it being removed, seed 003)", strings.Join(strays, ", "), s.Cluster),
			Fix:     "list the members (etcdctl member list) and remove the ones no Machine owns (etcdctl member remove <id>) before the upgrade"})
	}
	return out
}

// readOwners reads into s the Machines and VSphereVMs of every namespace,
// which CheckInventory needs only for a VM that s's own Machines do not
// own: a check probe polls several times a second, and a management
// cluster of its release's own managers serves these lists uncached.
// VSphereVMs are read in the version CAPV stores (v1beta2 from CAPV
// v1.16; converting every object to v1beta1 is a webhook call), else in
// v1beta1, which every CAPV serves.
func readOwners(ctx context.Context, o providers.Objects, scope providers.Object, s *ManagementState) error {
	all, err := o.ListObjects(ctx, scope, providers.ObjectRef{Cluster: "management", APIVersion: capiAPIVersion, Kind: "Machine"})
	if err != nil {
		return fmt.Errorf("list the Machines of every namespace, which tell whose a VM is: %w", err)
	}
	s.AllMachines = all
	for _, v := range []string{"v1beta2", "v1beta1"} {
		all, err = o.ListObjects(ctx, scope, providers.ObjectRef{Cluster: "management", APIVersion: "infrastructure.cluster.x-k8s.io/" + v, Kind: "VSphereVM"})
		if err == nil {
			s.VSphereVMs = all
			return nil
		}
		if !errors.Is(err, providers.ErrNotFound) {
			return fmt.Errorf("list the VSphereVMs of every namespace, which tell whose a VM is: %w", err)
		}
	}
	return nil // no CAPV (a Cluster API of another infrastructure)
}
