package scenario

import (
	"regexp"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// targetRef is ${target.NAME} in a fault's params or a probe's args: the
// names of the objects target NAME resolved to, comma separated, known
// only once the run has resolved its targets (a manifest that pins a pod
// to the picked node, a Node object probe). ${target.NAME.FIELD} is one
// fact of each of those objects instead (TargetRefFields): the name of its
// Node, its namespace, its Cluster, its owner (the KubeadmControlPlane or
// MachineDeployment), its providerID.
var targetRef = regexp.MustCompile(`\$\{target\.([^}.]*)(?:\.([^}]*))?\}`)

// TargetRefFields are the FIELDs of ${target.NAME.FIELD}, with the
// attribute each reads.
var TargetRefFields = map[string]providers.Attribute{
	"node":       providers.AttrNode,
	"namespace":  providers.AttrNamespace,
	"cluster":    providers.AttrCluster,
	"owner":      providers.AttrOwner,
	"providerID": providers.AttrProviderID,
}

// targetRefs lists the target names value refers to, and the FIELDs it
// reads of them ("" for the names themselves).
func targetRefs(value string) (names, fields []string) {
	for _, m := range targetRef.FindAllStringSubmatch(value, -1) {
		names = append(names, m[1])
		fields = append(fields, m[2])
	}
	return names, fields
}

// ExpandTargetRefs returns sc with every ${target.NAME} in its steps'
// params and args replaced by the names of objects[NAME], and every
// ${target.NAME.FIELD} by that fact of each. sc itself is not changed.
func ExpandTargetRefs(sc *Scenario, objects map[string][]providers.Object) *Scenario {
	expand := func(m map[string]string) map[string]string { return expandRefs(m, objects) }
	cond := func(c Condition) Condition {
		c.Args = expand(c.Args)
		return c
	}
	out := *sc
	out.Spec.Steps = make([]Step, len(sc.Spec.Steps))
	for i, st := range sc.Spec.Steps {
		switch {
		case st.Setup != nil:
			st.Setup = expandBaseline(st.Setup, cond)
		case st.Teardown != nil:
			st.Teardown = expandBaseline(st.Teardown, cond)
		case st.Inject != nil:
			in := *st.Inject
			in.Params = expand(in.Params)
			st.Inject = &in
		case st.Observe != nil:
			ob := *st.Observe
			ob.Phases = append([]Phase(nil), ob.Phases...)
			for j := range ob.Phases {
				ob.Phases[j].When = cond(ob.Phases[j].When)
			}
			ob.While = append([]Guard(nil), ob.While...)
			for j := range ob.While {
				ob.While[j].Condition = cond(ob.While[j].Condition)
			}
			st.Observe = &ob
		case st.Assert != nil:
			as := *st.Assert
			for _, w := range []**WindowAssertion{&as.Never, &as.Consistently} {
				if *w != nil {
					c := **w
					c.Condition = cond(c.Condition)
					*w = &c
				}
			}
			if as.Count != nil {
				c := *as.Count
				c.Condition = cond(c.Condition)
				as.Count = &c
			}
			st.Assert = &as
		}
		out.Spec.Steps[i] = st
	}
	return &out
}

func expandBaseline(b *Baseline, cond func(Condition) Condition) *Baseline {
	out := &Baseline{Require: make([]Condition, len(b.Require))}
	for i, c := range b.Require {
		out.Require[i] = cond(c)
	}
	return out
}

// expandRefs is m with each ${target.X} replaced by what objects give it.
func expandRefs(m map[string]string, objects map[string][]providers.Object) map[string]string {
	value := func(name, fieldName string) (string, bool) {
		objs, ok := objects[name]
		if !ok {
			return "", false
		}
		var list []string
		for _, o := range objs {
			v := o.Name
			if fieldName != "" {
				v = o.Attributes[TargetRefFields[fieldName]]
			}
			// A fact the objects share (their namespace, their
			// Cluster) is said once.
			if fieldName == "" || !slices.Contains(list, v) {
				list = append(list, v)
			}
		}
		return strings.Join(list, ","), true
	}
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = targetRef.ReplaceAllStringFunc(v, func(ref string) string {
			m := targetRef.FindStringSubmatch(ref)
			if n, ok := value(m[1], m[2]); ok {
				return n
			}
			return ref
		})
	}
	return out
}

func (v *validator) targetRef(path, name string) {
	switch {
	case name == "":
		v.errf(path, "required: the name of a target in spec.targets")
	case !v.targets[name]:
		v.errf(path, "unknown target %q; spec.targets defines: %s%s", name, list(v.targets), didYouMean(name, sortedKeys(v.targets)))
	case v.after[name] != "" && !v.ended[v.after[name]]:
		v.errf(path, "target %q is resolved once step %q has ended; only the steps after it read it", name, v.after[name])
	}
}

func (v *validator) args(path string, got map[string]string, allowed []string) {
	for _, k := range sortedKeys(got) {
		names, fields := targetRefs(got[k])
		for i, t := range names {
			switch {
			case !v.targets[t]:
				v.errf(path+"."+k, "${target.%s}: unknown target %q; spec.targets defines: %s", t, t, list(v.targets))
			case v.after[t] != "":
				v.errf(path+"."+k, "${target.%s}: target %q is resolved after step %q, and ${target...} is filled in before the first step", t, t, v.after[t])
			}
			if f := fields[i]; f != "" {
				if _, ok := TargetRefFields[f]; !ok {
					v.errf(path+"."+k, "${target.%s.%s}: unknown field %q; expected one of %s", t, f, f, own(strings.Join(sortedKeys(TargetRefFields), ", ")))
				}
			}
		}
		if !slices.Contains(allowed, k) {
			want := strings.Join(allowed, ", ")
			if want == "" {
				want = "none"
			}
			v.errf(path+"."+k, "unknown parameter %q; expected: %s%s", k, want, didYouMean(k, allowed))
		}
	}
}
