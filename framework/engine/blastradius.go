package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// RefusedError is a run the runner would not start: it breaks a safety
// limit the scenario did not declare it accepts. Nothing was injected.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

// checkBlastRadius walks the steps as they will run, with the resolved
// targets, and refuses before anything is injected a scenario that would at
// some point have more members of one etcd cluster down than it can lose
// and keep quorum ((n-1)/2 of n), unless spec.safety.acceptQuorumLoss says
// it means to.
func (r *run) checkBlastRadius(ctx context.Context) error {
	sc := r.in.Scenario
	if sc.Spec.Safety.AcceptQuorumLoss {
		return nil
	}
	down := map[string]map[string]string{} // etcd cluster → member object → inject step
	for _, st := range sc.Spec.Steps {
		switch {
		case st.Inject != nil:
			def := faultCatalogue[st.Inject.Fault]
			if def.takesEtcd == nil || !def.takesEtcd(st.Inject.Params) {
				continue
			}
			objs := r.objects[st.Inject.Target]
			if def.onHost {
				// What the host's failure takes: every Machine on it.
				hosts, err := hostsOf(ctx, r.in.Provider, objs)
				if err != nil {
					return fmt.Errorf("step %s: %w", st.Name, err)
				}
				objs = nil
				for _, h := range hosts {
					objs = append(objs, h.down...)
				}
			}
			for _, o := range objs {
				cluster := o.Attributes[providers.AttrEtcdCluster]
				n, err := strconv.Atoi(o.Attributes[providers.AttrEtcdMembers])
				if cluster == "" || err != nil {
					continue
				}
				if down[cluster] == nil {
					down[cluster] = map[string]string{}
				}
				down[cluster][o.Name] = st.Name
				if tolerated := (n - 1) / 2; len(down[cluster]) > tolerated {
					return &RefusedError{Reason: fmt.Sprintf(
						"step %s would have %d of the %d etcd members of %s down at once (%s); %d members keep quorum only while at most %d is down. Declare spec.safety.acceptQuorumLoss: true if the scenario means to lose quorum",
						st.Name, len(down[cluster]), n, cluster, strings.Join(slices.Sorted(maps.Keys(down[cluster])), ", "), n, tolerated)}
				}
			}
		case st.Undo != nil:
			for _, members := range down {
				for name, step := range members {
					if st.Undo.All || st.Undo.Fault == step {
						delete(members, name)
					}
				}
			}
		}
	}
	return nil
}

// takesEtcdMember is the takesEtcd of faults that stop a whole node or VM:
// whatever it hosts, an etcd member included, goes down with it.
func takesEtcdMember(map[string]string) bool { return true }
