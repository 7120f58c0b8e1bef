package scenario

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ScopeTo keeps every target of s inside one Cluster API cluster,
// namespace/name (run --cluster): a target that names no cluster is given
// it; one that names another cluster, or selects VMs by name or UUID
// (which no cluster scopes), is an error naming the field.
func (s *Scenario) ScopeTo(cluster string) error {
	ns, name, ok := strings.Cut(cluster, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("cluster %q: expected namespace/name", cluster)
	}
	var errs field.ErrorList
	for i := range s.Spec.Targets {
		t := &s.Spec.Targets[i]
		fld := field.NewPath("spec", "targets").Index(i).Child("select")
		switch sel := t.Select.Cluster; {
		case t.Select.VM != "" || t.Select.UUID != "":
			errs = append(errs, field.Invalid(fld, t.Name, fmt.Sprintf("target %s selects VMs by name or UUID, which cluster %s cannot scope; select its Machines (role, machineDeployment, controlPlane, nodeName)", t.Name, cluster)))
		case sel == "":
			t.Select.Cluster = cluster
		case sel != cluster && sel != name:
			errs = append(errs, field.Invalid(fld.Child("cluster"), sel, fmt.Sprintf("target %s is in cluster %s, outside the cluster of the run, %s", t.Name, sel, cluster)))
		default:
			t.Select.Cluster = cluster
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", s.Metadata.Name, errs.ToAggregate())
	}
	return nil
}
