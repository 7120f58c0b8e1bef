package labconfig

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The CNIs a lab cluster can run.
const (
	CNICalico = "calico"
	CNIAntrea = "antrea"
)

// What a lab cluster's VMs are (LabSpec.Nodes).
const (
	NodesSimulated  = "simulated"
	NodesContainers = "containers"
)

// LabSpec shapes the one workload cluster the embedded lab runs a scenario
// against: the scenario file's spec.lab, and the lab's own cluster spec
// (ClusterSpec adds the cluster's name). Its rules are in lab.go.
type LabSpec struct {
	ControlPlanes int `yaml:"controlPlanes"`
	Workers       int `yaml:"workers"`
	// WorkerMHC and ControlPlaneMHC create MachineHealthChecks on the
	// workers and on the control plane; workers have one unless told not
	// to, the control plane has none unless told (as in seed 002's TKGS).
	WorkerMHC       *bool `yaml:"workerMHC"`
	ControlPlaneMHC *bool `yaml:"controlPlaneMHC"`
	// NodeStartupTimeout is the health checks' nodeStartupTimeout; zero
	// keeps the profile's (2m compressed, 10m real).
	NodeStartupTimeout Duration `yaml:"nodeStartupTimeout"`
	// KubernetesVersion is the version the cluster is created at (its
	// KubeadmControlPlane's and MachineDeployment's); empty,
	// KubernetesVersion. On real nodes it needs a node image of that
	// version (KUBE_VERSION=... hack/kind-image.sh).
	KubernetesVersion string `yaml:"kubernetesVersion"`
	// UnhealthyTimeout is the health checks' timeout on a Node's Ready
	// Unknown or False (unhealthyNodeConditions); zero keeps the
	// profile's (3s compressed, 5m real).
	UnhealthyTimeout Duration `yaml:"unhealthyTimeout"`
	// NodeDrainTimeout bounds the drain of a worker's Node before its
	// Machine is deleted (the workers' nodeDrainTimeoutSeconds); zero
	// leaves it unset: Cluster API drains until done.
	NodeDrainTimeout Duration `yaml:"nodeDrainTimeout"`
	// CNI is calico (the default) or antrea: the node agent whose pod
	// must be admitted before a Node turns Ready.
	CNI string `yaml:"cni"`
	// Network is the cluster's pod network; empty fields take Calico's and
	// kubeadm's defaults.
	Network LabNetwork `yaml:"network"`
	// Nodes is what the cluster's VMs are: NodesSimulated (the default,
	// the node simulator) or NodesContainers (each VM a container of the
	// kind node image booted by real kubeadm).
	Nodes string `yaml:"nodes"`
	// SimulatedOnly, when set, says why the scenario cannot run on real
	// nodes (what only the simulated tier provides); a run whose cluster
	// has real nodes (nodes: containers, --nodes containers, a suite's
	// NODES=containers) ends as skipped with that reason.
	SimulatedOnly string `yaml:"simulatedOnly"`
	// Remediation limits when the health checks may remediate, in Cluster
	// API v1beta2's words; empty, they always may (100%).
	Remediation LabRemediation `yaml:"remediation"`
	// MaxUnhealthy and UnhealthyRange are v1beta1's names of
	// Remediation.TriggerIf's two fields, accepted as aliases.
	MaxUnhealthy   string `yaml:"maxUnhealthy"`
	UnhealthyRange string `yaml:"unhealthyRange"`
	// Release is the Cluster API and CAPV stack the lab's management
	// plane runs (a stack's name, or clusterAPI and capv); empty, the
	// default stack. A run's --release replaces it.
	Release Release `yaml:"release"`
	// HA is vSphere HA on the lab's vCenter cluster for this cluster's
	// VMs: when on, the VMs of a failed host (host.fail) are restarted on
	// another host RestartAfter after the failure, as HA restarts them.
	// Off, they stay down until the host is back.
	HA LabHA `yaml:"ha"`
	// Placement lays the cluster's control-plane VMs on the vCenter
	// cluster's hosts: PlacementAny (the default) as DRS places any VM,
	// on the host with the fewest VMs then; PlacementSpread each on a
	// host of its own while there are hosts (a DRS anti-affinity rule);
	// PlacementTogether all on one host.
	Placement LabPlacement `yaml:"placement"`
}

// LabPlacement is where the lab's vCenter puts a cluster's VMs
// (LabSpec.Placement).
type LabPlacement struct {
	ControlPlanes string `yaml:"controlPlanes"`
	// ControlPlaneHosts, above 0, keeps the control planes on that many
	// hosts (the first by name, a DRS VM-Host rule's host group): with
	// spread, 3 control planes on 2 hosts put 2 on the first.
	ControlPlaneHosts int `yaml:"controlPlaneHosts"`
}

// The placements of LabPlacement.ControlPlanes.
const (
	PlacementAny      = "any"
	PlacementSpread   = "spread"
	PlacementTogether = "together"
)

// LabHA is vSphere HA as the lab plays it (LabSpec.HA).
type LabHA struct {
	Enabled bool `yaml:"enabled"`
	// RestartAfter is the time from a host's failure to its VMs powered
	// on elsewhere: HA's failure detection (about 15 s) and the restart;
	// zero is DefaultHARestart.
	RestartAfter Duration `yaml:"restartAfter"`
}

// DefaultHARestart is LabHA.RestartAfter's default: HA declares a host
// failed after about 15 s without heartbeats and powers its VMs on within
// seconds after that.
const DefaultHARestart = 20 * time.Second

// Restart is how long after a host failure HA restarts its VMs; zero
// when HA is off.
func (h LabHA) Restart() time.Duration {
	switch {
	case !h.Enabled:
		return 0
	case h.RestartAfter.Duration > 0:
		return h.RestartAfter.Duration
	}
	return DefaultHARestart
}

// LabRemediation is the remediation of the lab's MachineHealthChecks.
type LabRemediation struct {
	TriggerIf LabTriggerIf `yaml:"triggerIf"`
}

// LabTriggerIf says when a MachineHealthCheck may remediate, as Cluster
// API's MachineHealthCheckRemediationTriggerIf: while at most
// UnhealthyLessThanOrEqualTo Machines (a number, or a percentage such as
// "40%") are unhealthy, or while their number is in UnhealthyInRange
// ("[1-3]").
type LabTriggerIf struct {
	UnhealthyLessThanOrEqualTo string `yaml:"unhealthyLessThanOrEqualTo"`
	UnhealthyInRange           string `yaml:"unhealthyInRange"`
}

// LabNetwork is a lab cluster's pod network.
type LabNetwork struct {
	// PodCIDR is kubeadm's podSubnet (default 192.168.0.0/16).
	PodCIDR string `yaml:"podCIDR"`
	// NodeCIDRMaskSize is the size of each Node's podCIDR (default 24).
	NodeCIDRMaskSize int `yaml:"nodeCIDRMaskSize"`
	// CalicoBlockSize is the default IPPool's blockSize (default 26).
	CalicoBlockSize int `yaml:"calicoBlockSize"`
}

// CNIAgent is a CNI's node agent: its DaemonSet's name and image.
type CNIAgent struct{ Name, Image string }

// CNIAgents are each CNI's node agent.
var CNIAgents = map[string]CNIAgent{
	CNICalico: {"calico-node", "docker.io/calico/node:v3.29.3"},
	CNIAntrea: {"antrea-agent", "antrea/antrea-agent-ubuntu:v2.3.0"},
}

// Validate checks a lab cluster's shape; fld is where it stands (spec.lab
// in a scenario file). Each error's Detail says what was found and what
// was expected.
func (l LabSpec) Validate(fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	invalid := func(f *field.Path, v any, format string, args ...any) {
		errs = append(errs, field.Invalid(f, v, fmt.Sprintf(format, Shown(args)...)))
	}
	if l.ControlPlanes < 1 || l.ControlPlanes%2 == 0 {
		invalid(fld.Child("controlPlanes"), l.ControlPlanes, "got %d, expected an odd number of at least 1 (etcd needs a majority)", l.ControlPlanes)
	}
	if l.Workers < 0 {
		invalid(fld.Child("workers"), l.Workers, "got %d, expected 0 or more", l.Workers)
	}
	if l.Nodes != "" && l.Nodes != NodesSimulated && l.Nodes != NodesContainers {
		invalid(fld.Child("nodes"), l.Nodes, "got %q, expected %s or %s", l.Nodes, NodesSimulated, NodesContainers)
	}
	if l.SimulatedOnly != "" && l.RealNodes() {
		invalid(fld.Child("nodes"), l.Nodes, "got %s, but spec.lab.simulatedOnly says the scenario cannot run on real nodes: %s", l.Nodes, l.SimulatedOnly)
	}
	if l.CNI != "" && l.CNI != CNICalico && l.CNI != CNIAntrea {
		invalid(fld.Child("cni"), l.CNI, "got %q, expected %s or %s", l.CNI, CNICalico, CNIAntrea)
	}
	if d := l.NodeStartupTimeout.Duration; d < 0 || (d > 0 && d < 10*time.Second) {
		invalid(fld.Child("nodeStartupTimeout"), l.NodeStartupTimeout.String(), "got %s, expected at least 10s: a control plane needs that long to join", l.NodeStartupTimeout)
	}
	if v := l.KubernetesVersion; v != "" && !kubernetesVersion.MatchString(v) {
		invalid(fld.Child("kubernetesVersion"), v, "got %q, expected a Kubernetes version such as v1.34.3", v)
	}
	if d := l.UnhealthyTimeout.Duration; d < 0 || (d > 0 && d < time.Second) {
		invalid(fld.Child("unhealthyTimeout"), l.UnhealthyTimeout.String(), "got %s, expected at least 1s (MachineHealthCheck timeouts are whole seconds)", l.UnhealthyTimeout)
	}
	if d := l.NodeDrainTimeout.Duration; d < 0 || (d > 0 && (d < time.Second || d%time.Second != 0)) {
		invalid(fld.Child("nodeDrainTimeout"), l.NodeDrainTimeout.String(), "got %s, expected whole seconds, at least 1s (a Machine's nodeDrainTimeoutSeconds)", l.NodeDrainTimeout)
	}
	if d := l.HA.RestartAfter.Duration; d < 0 || (d > 0 && !l.HA.Enabled) {
		invalid(fld.Child("ha", "restartAfter"), l.HA.RestartAfter.String(), "got %s, expected a positive duration with ha.enabled: true", l.HA.RestartAfter)
	}
	if p := l.Placement.ControlPlanes; p != "" && p != PlacementAny && p != PlacementSpread && p != PlacementTogether {
		invalid(fld.Child("placement", "controlPlanes"), p, "got %q, expected %s, %s or %s", p, PlacementAny, PlacementSpread, PlacementTogether)
	}
	if n := l.Placement.ControlPlaneHosts; n < 0 {
		invalid(fld.Child("placement", "controlPlaneHosts"), n, "got %d, expected 1 or more (0: every host)", n)
	}
	errs = append(errs, l.validateRemediation(fld)...)
	errs = append(errs, l.Release.Validate(fld.Child("release"))...)
	net := fld.Child("network")
	podBits := 16
	if n := l.Network.PodCIDR; n != "" {
		p, err := netip.ParsePrefix(n)
		if err != nil || !p.Addr().Is4() {
			invalid(net.Child("podCIDR"), n, "got %q, expected an IPv4 CIDR such as 10.202.146.0/24", n)
		} else {
			podBits = p.Bits()
		}
	}
	for _, f := range []struct {
		path string
		bits int
	}{{"nodeCIDRMaskSize", l.Network.NodeCIDRMaskSize}, {"calicoBlockSize", l.Network.CalicoBlockSize}} {
		if f.bits != 0 && (f.bits < podBits || f.bits > 32) {
			invalid(net.Child(f.path), f.bits, "got %d, expected %d to 32 (a subnet of the pod CIDR /%d)", f.bits, podBits, podBits)
		}
	}
	return errs
}

// HasWorkerMHC tells whether the workers get a MachineHealthCheck: yes
// unless the spec says no.
func (l LabSpec) HasWorkerMHC() bool { return l.WorkerMHC == nil || *l.WorkerMHC }

// HasControlPlaneMHC tells whether the control plane gets one: no unless
// the spec says yes (as in seed 002's TKGS).
func (l LabSpec) HasControlPlaneMHC() bool { return l.ControlPlaneMHC != nil && *l.ControlPlaneMHC }

// RealNodes tells whether the cluster's VMs are containers booted by real
// kubeadm.
func (l LabSpec) RealNodes() bool { return l.Nodes == NodesContainers }

// CNIName is the cluster's CNI, CNICalico unless the spec says otherwise.
func (l LabSpec) CNIName() string {
	if l.CNI != "" {
		return l.CNI
	}
	return CNICalico
}

// PodNetwork is the pod network with Calico's and kubeadm's defaults
// filled in: 192.168.0.0/16, /24 node CIDRs, /26 blocks.
func (l LabSpec) PodNetwork() (pod netip.Prefix, nodeBits, blockBits int) {
	pod, err := netip.ParsePrefix(l.Network.PodCIDR)
	if err != nil {
		pod = netip.MustParsePrefix("192.168.0.0/16")
	}
	nodeBits, blockBits = l.Network.NodeCIDRMaskSize, l.Network.CalicoBlockSize
	if nodeBits == 0 {
		nodeBits = 24
	}
	if blockBits == 0 {
		blockBits = 26
	}
	return pod.Masked(), nodeBits, blockBits
}

// unhealthyRange is Cluster API's pattern for unhealthyInRange.
var unhealthyRange = regexp.MustCompile(`^\[([0-9]+)-([0-9]+)\]$`)

func (l LabSpec) validateRemediation(fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	t := fld.Child("remediation", "triggerIf")
	if l.MaxUnhealthy != "" && l.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo != "" {
		errs = append(errs, field.Invalid(fld.Child("maxUnhealthy"), l.MaxUnhealthy, "is an alias of "+t.Child("unhealthyLessThanOrEqualTo").String()+"; set one of them"))
	}
	if l.UnhealthyRange != "" && l.Remediation.TriggerIf.UnhealthyInRange != "" {
		errs = append(errs, field.Invalid(fld.Child("unhealthyRange"), l.UnhealthyRange, "is an alias of "+t.Child("unhealthyInRange").String()+"; set one of them"))
	}
	trigger := l.TriggerIf()
	if v := trigger.UnhealthyLessThanOrEqualTo; v != "" {
		n, pct := strings.CutSuffix(v, "%")
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || (pct && i > 100) {
			errs = append(errs, field.Invalid(t.Child("unhealthyLessThanOrEqualTo"), v, fmt.Sprintf("got %q, expected a number of Machines such as 2, or a percentage such as 40%%", Shown([]any{v})...)))
		}
	}
	if v := trigger.UnhealthyInRange; v != "" {
		m := unhealthyRange.FindStringSubmatch(v)
		if m == nil {
			errs = append(errs, field.Invalid(t.Child("unhealthyInRange"), v, fmt.Sprintf("got %q, expected a range such as [1-3]", Shown([]any{v})...)))
		} else if lo, hi := atoi(m[1]), atoi(m[2]); lo > hi {
			errs = append(errs, field.Invalid(t.Child("unhealthyInRange"), v, fmt.Sprintf("got %q: the low end is above the high one", v)))
		}
	}
	if trigger.UnhealthyLessThanOrEqualTo != "" && trigger.UnhealthyInRange != "" {
		errs = append(errs, field.Invalid(t, "", "set unhealthyLessThanOrEqualTo or unhealthyInRange, not both"))
	}
	return errs
}

// TriggerIf is the remediation trigger with the aliases folded in.
func (l LabSpec) TriggerIf() LabTriggerIf {
	t := l.Remediation.TriggerIf
	if t.UnhealthyLessThanOrEqualTo == "" {
		t.UnhealthyLessThanOrEqualTo = l.MaxUnhealthy
	}
	if t.UnhealthyInRange == "" {
		t.UnhealthyInRange = l.UnhealthyRange
	}
	return t
}

// kubernetesVersion is a Kubernetes version as Cluster API takes it.
var kubernetesVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

// Version is the cluster's Kubernetes version: KubernetesVersion unless
// it names one.
func (l LabSpec) Version() string {
	if l.KubernetesVersion != "" {
		return l.KubernetesVersion
	}
	return KubernetesVersion
}

// atoi is strconv.Atoi for digits a pattern has matched.
func atoi(digits string) int {
	n, _ := strconv.Atoi(digits)
	return n
}

// maxShown is the longest value a message repeats from the file.
const maxShown = 120

// Shown cuts the string arguments of a message to maxShown bytes, saying
// how long they were: a 200 KB name is not echoed whole.
func Shown(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		s, ok := a.(string)
		if !ok || len(s) <= maxShown {
			out[i] = a
			continue
		}
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		out[i] = fmt.Sprintf("%s...(%d bytes)", s[:cut], len(s))
	}
	return out
}
