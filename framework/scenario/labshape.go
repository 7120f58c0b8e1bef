package scenario

import (
	"fmt"
	"slices"

	"github.com/faultline-dev/faultline/providers"
)

// labShape checks the targets and steps against the lab spec.lab declares,
// as a run on that lab would once it had started and resolved its targets:
// a count larger than the Machines a role selects, and more etcd members
// down at once than keep quorum. Only targets that select by role alone
// (in the lab's cluster) are known from the shape; the run checks the rest.
func (v *validator) labShape() {
	sp := v.s.Spec
	if sp.Lab == nil || sp.Lab.ControlPlanes < 1 || sp.Lab.Workers < 0 {
		return
	}
	picked := map[string]int{} // role-only control-plane targets → Machines picked
	byName := map[string]Target{}
	for i, t := range sp.Targets {
		byName[t.Name] = t
		n, ok := roleMachines(t.Select, *sp.Lab)
		if !ok || t.After != "" {
			// A target resolved after a step picks from what the steps
			// made, which the shape does not tell.
			continue
		}
		// An excluded target is of the same role only when it selects by
		// role too; otherwise what it takes is not known here.
		for _, ex := range t.Exclude {
			if c, ok := picked[ex]; ok && byName[ex].Select.Role == t.Select.Role {
				n -= c
			}
		}
		if n == 0 {
			v.errf(fmt.Sprintf("spec.targets[%d].select", i), "selects no Machine: spec.lab has 0 %s Machines", t.Select.Role)
			continue
		}
		if t.Count > n {
			v.errf(fmt.Sprintf("spec.targets[%d].count", i), "%d, but spec.lab has %d %s Machine(s) for it to pick from; expected at most %d", t.Count, n, t.Select.Role, n)
			continue
		}
		if t.Select.Role != "control-plane" {
			continue
		}
		switch {
		case t.Count > 0:
			picked[t.Name] = t.Count
		case t.Percent > 0:
			picked[t.Name] = max(1, (n*t.Percent+99)/100)
		default:
			picked[t.Name] = n
		}
	}
	if sp.Safety.AcceptQuorumLoss {
		return
	}
	members := sp.Lab.ControlPlanes
	tolerated := (members - 1) / 2
	var down []string // control-plane targets with a fault that takes their etcd member
	for i, st := range sp.Steps {
		switch {
		case st.Inject != nil:
			word, known := v.vocab.Faults[st.Inject.Fault]
			if _, cp := picked[st.Inject.Target]; !known || !cp || word.TakesEtcd == nil || !word.TakesEtcd(st.Inject.Params) {
				continue
			}
			down = append(down, st.Inject.Target)
			if n := membersDown(down, picked, byName); n > tolerated {
				v.errf(fmt.Sprintf("spec.steps[%d].inject", i), "would have at least %d of the lab's %d etcd members down at once; %d keep quorum only while at most %d is down (the run would refuse it after starting the lab). Declare spec.safety.acceptQuorumLoss: true if the scenario means to lose quorum", n, members, members, tolerated)
				return
			}
		case st.Undo != nil:
			if st.Undo.All {
				down = nil
				continue
			}
			for _, s := range sp.Steps[:i] {
				if s.Name == st.Undo.Fault && s.Inject != nil {
					down = without(down, s.Inject.Target)
				}
			}
		}
	}
}

// roleMachines is how many Machines a selector picks from in the lab of
// shape lab, when it selects by role alone.
func roleMachines(sel providers.Selector, lab LabSpec) (int, bool) {
	if sel.MachineDeployment != "" || sel.ControlPlane != "" || sel.NodeName != "" || len(sel.NodeLabels) > 0 ||
		sel.VM != "" || sel.UUID != "" || sel.ProviderID != "" || sel.Host != "" || (sel.Cluster != "" && sel.Cluster != "lab") {
		return 0, false
	}
	switch sel.Role {
	case "control-plane":
		return lab.ControlPlanes, true
	case "worker":
		return lab.Workers, true
	}
	return 0, false
}

// membersDown is the fewest etcd members the down targets take at once:
// targets that exclude one another add up; others may pick the same
// Machines, so they count for as many as the largest.
func membersDown(down []string, picked map[string]int, byName map[string]Target) int {
	total := 0
	var seen []string
	for _, name := range down {
		if slices.Contains(seen, name) {
			continue
		}
		disjoint := true
		for _, s := range seen {
			if !slices.Contains(byName[name].Exclude, s) && !slices.Contains(byName[s].Exclude, name) {
				disjoint = false
			}
		}
		if disjoint {
			total += picked[name]
		} else {
			total = max(total, picked[name])
		}
		seen = append(seen, name)
	}
	return total
}

func without(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
