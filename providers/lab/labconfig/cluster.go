package labconfig

import (
	"errors"
	"fmt"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// KubernetesVersion is the version the lab's workload clusters are
// created at unless their spec.lab names another.
const KubernetesVersion = "v1.35.4"

// Namespace holds the Cluster API objects of the clusters a lab starts
// with; a cluster it makes afterwards (Renew) has a namespace of its own.
const Namespace = "default"

// ClusterName is the name `faultline run` and the suites give the lab's
// cluster, in every namespace: the catalogue's parameters (a
// KubeadmControlPlane's name) default to it.
const ClusterName = "lab"

// ClusterSpec is one workload cluster of the lab: its name and the shape
// a scenario's spec.lab gives it, whose rules LabSpec.Validate
// holds.
type ClusterSpec struct {
	Name string
	// Namespace holds its Cluster API objects; Namespace ("default")
	// when empty.
	Namespace string
	LabSpec
}

// SpecFor is the lab cluster named name that a scenario's spec.lab asks
// for.
func SpecFor(name string, s LabSpec) ClusterSpec {
	return ClusterSpec{Name: name, LabSpec: s}
}

// Serves tells whether a cluster of spec c can run a scenario whose
// spec.lab is s: the same control planes (etcd scenarios count members),
// at least its workers, the same CNI, pod network and health checks (a
// MachineHealthCheck setting the scenario leaves out does not matter), and
// the same drain timeout, vSphere HA and placement.
func (c ClusterSpec) Serves(s LabSpec) bool {
	wpod, wnode, wblock := s.PodNetwork()
	cpod, cnode, cblock := c.PodNetwork()
	return c.ControlPlanes == s.ControlPlanes && c.Workers >= s.Workers && c.CNIName() == s.CNIName() && c.RealNodes() == s.RealNodes() &&
		cpod == wpod && cnode == wnode && cblock == wblock && c.NodeStartupTimeout == s.NodeStartupTimeout && c.UnhealthyTimeout == s.UnhealthyTimeout && c.NodeDrainTimeout == s.NodeDrainTimeout && c.Version() == s.Version() &&
		c.HasWorkerMHC() == s.HasWorkerMHC() && (s.ControlPlaneMHC == nil || c.HasControlPlaneMHC() == s.HasControlPlaneMHC()) &&
		c.TriggerIf() == s.TriggerIf() && c.Release.SameStack(s.Release) && c.HA.Restart() == s.HA.Restart() && c.Placement == s.Placement
}

// Validate checks the name and the shape.
func (s ClusterSpec) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("cluster name is required")
	}
	var errs []error
	for _, msg := range validation.IsDNS1123Label(s.NamespaceOrDefault()) {
		errs = append(errs, fmt.Errorf("cluster %s: namespace %q: %s", s.Name, s.Namespace, msg))
	}
	for _, e := range s.LabSpec.Validate(field.NewPath("cluster")) {
		errs = append(errs, fmt.Errorf("cluster %s: %s: %s", s.Name, strings.TrimPrefix(e.Field, "cluster."), e.Detail))
	}
	return errors.Join(errs...)
}

// Shape says its Machines for people: "3 control planes, 1 worker".
func (s ClusterSpec) Shape() string {
	plural := func(n int, what string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s", what)
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	return plural(s.ControlPlanes, "control plane") + ", " + plural(int(s.Workers), "worker")
}

// NamespaceOrDefault is the namespace of the cluster's objects.
func (s ClusterSpec) NamespaceOrDefault() string {
	if s.Namespace == "" {
		return Namespace
	}
	return s.Namespace
}

// Key is the cluster's namespace/name, the form --cluster and a
// scenario's ScopeTo take.
func (s ClusterSpec) Key() string { return s.NamespaceOrDefault() + "/" + s.Name }

// ControlPlaneName and MachineDeploymentName are the names of the
// cluster's KubeadmControlPlane and MachineDeployment.
func (s ClusterSpec) ControlPlaneName() string      { return s.Name + "-control-plane" }
func (s ClusterSpec) MachineDeploymentName() string { return s.Name + "-md-0" }

// ClusterKey is the namespace/name of a cluster the lab runs (see
// ClusterSpec.Key).
func ClusterKey(namespace, name string) string { return namespace + "/" + name }

// ObjectKey is the key of the object named after the cluster of key (its
// Cluster, its kubeconfig and CA Secrets' prefix).
func ObjectKey(key string) client.ObjectKey {
	ns, name, _ := strings.Cut(key, "/")
	return client.ObjectKey{Namespace: ns, Name: name}
}
