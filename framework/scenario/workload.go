package scenario

import (
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/providers"
)

// Workload is an application faultline deploys into a target's workload
// cluster before the first step, watches for the whole run, and removes at
// the end like a fault: what the applications felt is measured beside
// what the infrastructure did.
type Workload struct {
	// Name names the workload in probes, assertions and results, and its
	// Deployment and Service.
	Name string `yaml:"name"`
	// Target is the target whose workload cluster runs it.
	Target string `yaml:"target"`
	// Namespace is where its objects go; DefaultWorkloadNamespace when
	// unset. faultline creates the namespace when it is missing.
	Namespace string `yaml:"namespace"`
	// Replicas of its Deployment; DefaultWorkloadReplicas when unset.
	Replicas int `yaml:"replicas"`
	// Spread places the replicas on different nodes: required (a replica
	// with no free node stays Pending) or preferred. None when unset.
	Spread string `yaml:"spread"`
	// DisruptionBudget, when set, adds a PodDisruptionBudget: a drain
	// evicts no more than it allows.
	DisruptionBudget *DisruptionBudget `yaml:"disruptionBudget"`
	// Interval is how often each measure is sampled;
	// DefaultSampleInterval when unset.
	Interval Duration `yaml:"interval"`
}

// DisruptionBudget is a PodDisruptionBudget's one limit.
type DisruptionBudget struct {
	MinAvailable   *int `yaml:"minAvailable"`
	MaxUnavailable *int `yaml:"maxUnavailable"`
}

// The defaults of a workload, and the bounds of its fields.
const (
	DefaultWorkloadNamespace = "faultline-workloads"
	DefaultWorkloadReplicas  = 2
	DefaultSampleInterval    = 250 * time.Millisecond
	MaxWorkloadReplicas      = 20
)

// The measures of a workload's disruption.
const (
	// MeasureRequests is real requests through the workload's Service.
	MeasureRequests = "requests"
	// MeasureEndpoints is the Service's ready endpoints.
	MeasureEndpoints = "endpoints"
)

// MeasureOf is the measure args name ("of"), requests when unset.
func MeasureOf(args map[string]string) string {
	if m := args["of"]; m != "" {
		return m
	}
	return MeasureRequests
}

// DisruptionAssertion bounds a workload's disruption over the whole run:
// the time its measure was down in all (AtMost) and the longest gap
// (Longest). A bound of 0s means no gap at all.
type DisruptionAssertion struct {
	Workload string    `yaml:"workload"`
	Of       string    `yaml:"of"`
	AtMost   *Duration `yaml:"atMost"`
	Longest  *Duration `yaml:"longest"`
}

// WorkloadOf returns the workload of that name, or nil.
func (s *Scenario) WorkloadOf(name string) *Workload {
	for i := range s.Spec.Workloads {
		if s.Spec.Workloads[i].Name == name {
			return &s.Spec.Workloads[i]
		}
	}
	return nil
}

// NamespaceOrDefault is the workload's namespace.
func (w Workload) NamespaceOrDefault() string {
	if w.Namespace != "" {
		return w.Namespace
	}
	return DefaultWorkloadNamespace
}

// ReplicasOrDefault is the workload's replica count.
func (w Workload) ReplicasOrDefault() int {
	if w.Replicas != 0 {
		return w.Replicas
	}
	return DefaultWorkloadReplicas
}

// IntervalOrDefault is the workload's sampling interval.
func (w Workload) IntervalOrDefault() Duration {
	if w.Interval.Duration != 0 {
		return w.Interval
	}
	return D(DefaultSampleInterval)
}

// workloads checks spec.workloads: run before the steps, whose probes
// and assertions name them.
func (v *validator) workloads() {
	ws := v.s.Spec.Workloads
	if len(ws) > 0 && !v.requires[providers.CapWorkloads] {
		v.errf("spec.workloads", "a workload needs capability %s; add it to spec.requires", providers.CapWorkloads)
	}
	seen := map[string]bool{}
	for i, w := range ws {
		path := fmt.Sprintf("spec.workloads[%d]", i)
		switch {
		case !dnsLabel.MatchString(w.Name) || len(w.Name) > 40:
			v.errf(path+".name", "required: lower-case letters, digits and '-', at most 40 characters, got %q", w.Name)
		case seen[w.Name]:
			v.errf(path+".name", "workload %q is defined twice", w.Name)
		}
		seen[w.Name] = true
		v.targetRef(path+".target", w.Target)
		if w.Namespace != "" && (!dnsLabel.MatchString(w.Namespace) || len(w.Namespace) > 63) {
			v.errf(path+".namespace", "%q must be lower-case letters, digits and '-', at most 63 characters", w.Namespace)
		}
		if w.Replicas < 0 || w.Replicas > MaxWorkloadReplicas {
			v.errf(path+".replicas", "%d is out of range; expected 1 to %d", w.Replicas, MaxWorkloadReplicas)
		}
		switch w.Spread {
		case "", "required", "preferred":
		default:
			v.errf(path+".spread", "got %q, expected required or preferred", w.Spread)
		}
		if b := w.DisruptionBudget; b != nil {
			switch {
			case (b.MinAvailable == nil) == (b.MaxUnavailable == nil):
				v.errf(path+".disruptionBudget", "set minAvailable or maxUnavailable, one of them")
			case b.MinAvailable != nil && (*b.MinAvailable < 0 || *b.MinAvailable > w.ReplicasOrDefault()):
				v.errf(path+".disruptionBudget.minAvailable", "%d is out of range; expected 0 to the replicas, %d", *b.MinAvailable, w.ReplicasOrDefault())
			case b.MaxUnavailable != nil && (*b.MaxUnavailable < 0 || *b.MaxUnavailable > w.ReplicasOrDefault()):
				v.errf(path+".disruptionBudget.maxUnavailable", "%d is out of range; expected 0 to the replicas, %d", *b.MaxUnavailable, w.ReplicasOrDefault())
			}
		}
		if d := w.Interval.Duration; d < 0 || (d > 0 && d < MinPollInterval) {
			v.errf(path+".interval", "%s is shorter than the minimum %s", w.Interval, MinPollInterval)
		}
	}
}

// workloadArgs checks the workload and measure a probe or an assertion
// names.
func (v *validator) workloadArgs(path string, workload, of string) {
	switch {
	case workload == "":
		v.errf(path+".workload", "required: the name of a workload in spec.workloads")
	case v.s.WorkloadOf(workload) == nil:
		names := map[string]bool{}
		for _, w := range v.s.Spec.Workloads {
			names[w.Name] = true
		}
		v.errf(path+".workload", "unknown workload %q; spec.workloads defines: %s%s", workload, list(names), didYouMean(workload, sortedKeys(names)))
	}
	if of != "" && of != MeasureRequests && of != MeasureEndpoints {
		v.errf(path+".of", "got %q, expected %s or %s", of, MeasureRequests, MeasureEndpoints)
	}
}

func (v *validator) disruption(path string, d DisruptionAssertion) {
	v.workloadArgs(path, d.Workload, d.Of)
	if d.AtMost == nil && d.Longest == nil {
		v.errf(path, "required: atMost, longest or both (0s: no gap at all)")
	}
	for name, b := range map[string]*Duration{"atMost": d.AtMost, "longest": d.Longest} {
		if b != nil && b.Duration < 0 {
			v.errf(path+"."+name, "%s is negative", b)
		}
	}
}
