package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/providers"
)

// machineProbe asks f about a Machine, read through ClusterAPI; f reads
// the Machine's own fields, not its Node's.
func machineProbe(f func(providers.MachineState) (bool, string)) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return stateProbe(func(ctx context.Context, p providers.Provider, obj providers.Object) (providers.MachineState, error) {
		c, err := providers.As[providers.ClusterAPI](p, providers.CapClusterAPI)
		if err != nil {
			return providers.MachineState{}, err
		}
		// f reads the Machine only: its Node is not asked for, so a
		// workload API that hangs does not stretch the reading.
		if r, ok := c.(providers.MachineReader); ok {
			return r.MachineOnly(ctx, obj)
		}
		return c.Machine(ctx, obj)
	}, f)
}

// nodeProbe asks f about a target's Node: a Machine's, or a node
// container's.
func nodeProbe(f func(providers.MachineState) (bool, string)) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return stateProbe(func(ctx context.Context, p providers.Provider, obj providers.Object) (providers.MachineState, error) {
		n, err := providers.NodesOf(p)
		if err != nil {
			return providers.MachineState{}, err
		}
		return n.NodeOf(ctx, obj)
	}, f)
}

func stateProbe(read func(context.Context, providers.Provider, providers.Object) (providers.MachineState, error), f func(providers.MachineState) (bool, string)) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, _ map[string]string) (bool, string, error) {
		st, err := read(ctx, p, obj)
		if err != nil {
			return false, "", err
		}
		ok, detail := f(st)
		return ok, detail + stamps(st.Stamps), nil
	}
}

func stamps(s map[string]time.Time) string {
	if len(s) == 0 {
		return ""
	}
	parts := make([]string, 0, len(s))
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+" "+s[k].UTC().Format(time.RFC3339))
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

func nodeDetail(st providers.MachineState) string {
	switch {
	case st.Gone:
		return "Machine gone"
	case st.Node == "":
		return "no Node"
	case st.NodeReady == "":
		return "Node " + st.Node + " gone"
	}
	d := "Node " + st.Node + " Ready=" + st.NodeReady
	if st.NodeMessage != "" {
		d += " (" + st.NodeMessage + ")"
	}
	return d
}

func nodeNotReady(st providers.MachineState) (bool, string) {
	return st.NodeReady != "True", nodeDetail(st)
}

func nodeReady(st providers.MachineState) (bool, string) {
	return !st.Gone && st.NodeReady == "True", nodeDetail(st)
}

func machineUnhealthy(st providers.MachineState) (bool, string) {
	switch {
	case st.Gone:
		// Remediation deletes the Machine; gone implies it was found
		// unhealthy or deleted, which machine-deleted tells apart.
		return true, "Machine gone"
	case st.Unhealthy:
		return true, "marked unhealthy, phase " + st.Phase
	}
	return false, "HealthCheckSucceeded not reported false, phase " + st.Phase
}

func machineDeleted(st providers.MachineState) (bool, string) {
	switch {
	case st.Gone:
		return true, "Machine gone"
	case st.Deleting:
		return true, "Machine deleting, phase " + st.Phase
	}
	return false, "Machine present, phase " + st.Phase
}

func machineRunning(st providers.MachineState) (bool, string) {
	return !st.Gone && !st.Deleting && st.Phase == "Running", "phase " + st.Phase
}

// replacements reads the Machines that replaced the target's Machine.
func replacements(ctx context.Context, p providers.Provider, obj providers.Object) ([]providers.MachineState, error) {
	c, err := providers.As[providers.ClusterAPI](p, providers.CapClusterAPI)
	if err != nil {
		return nil, err
	}
	return c.Replacements(ctx, obj)
}

func replacementDetail(r providers.MachineState) string {
	return r.Name + " phase " + r.Phase + ", " + nodeDetail(r)
}

// replacementRunning holds when a Machine that replaced the target's Machine
// is Running with a Ready Node.
func replacementRunning(ctx context.Context, p providers.Provider, obj providers.Object, _ map[string]string) (bool, string, error) {
	reps, err := replacements(ctx, p, obj)
	if err != nil {
		return false, "", err
	}
	if len(reps) == 0 {
		return false, "no replacement Machine yet", nil
	}
	var seen []string
	for _, r := range reps {
		if !r.Gone && !r.Deleting && r.Phase == "Running" && r.NodeReady == "True" {
			return true, "replacement " + r.Name + " Running, " + nodeDetail(r) + stamps(r.Stamps), nil
		}
		seen = append(seen, replacementDetail(r))
	}
	return false, "replacements: " + strings.Join(seen, "; "), nil
}

// replacementsCreated names every Machine that replaced the target's
// Machine, in any phase: a count assertion over it counts the Machines of
// a recreation loop.
func replacementsCreated(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) ([]string, string, error) {
	reps, err := replacements(ctx, p, obj)
	if err != nil {
		return nil, "", err
	}
	if len(reps) == 0 {
		return nil, "no replacement Machine", nil
	}
	ids := make([]string, 0, len(reps))
	seen := make([]string, 0, len(reps))
	for _, r := range reps {
		seen = append(seen, replacementDetail(r))
		if m, ph := args["nodeMessage"], args["phase"]; (m == "" || strings.Contains(r.NodeMessage, m)) && (ph == "" || r.Phase == ph) {
			ids = append(ids, r.Name)
		}
	}
	return ids, "replacements: " + strings.Join(seen, "; "), nil
}

// ownerProbe reads the target's owner (MachineDeployment or control plane)
// and judges it with f.
func ownerProbe(f func(providers.Object, providers.OwnerState) (bool, string, error)) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, _ map[string]string) (bool, string, error) {
		c, err := providers.As[providers.ClusterAPI](p, providers.CapClusterAPI)
		if err != nil {
			return false, "", err
		}
		o, err := c.Owner(ctx, obj)
		if err != nil {
			return false, "", err
		}
		return f(obj, o)
	}
}

// replicasRestored holds when the target's owner has its desired number of
// healthy Machines and none deleting.
func replicasRestored(_ providers.Object, o providers.OwnerState) (bool, string, error) {
	detail := fmt.Sprintf("%s %s: %d of %d healthy, %d deleting", o.Kind, o.Name, o.Healthy, o.Desired, o.Deleting)
	if len(o.DeletingWhy) > 0 {
		detail += " (" + strings.Join(o.DeletingWhy, "; ") + ")"
	}
	return o.Healthy >= o.Desired && o.Deleting == 0, detail, nil
}

// etcdHealthy holds when the target's control plane has as many healthy
// etcd members as it wants replicas.
func etcdHealthy(obj providers.Object, o providers.OwnerState) (bool, string, error) {
	if o.Kind != "KubeadmControlPlane" {
		return false, "", fmt.Errorf("etcd-healthy needs a control-plane Machine, %s belongs to %s %s", obj, o.Kind, o.Name)
	}
	return o.EtcdHealthy >= o.Desired, fmt.Sprintf("%s %s: %d of %d etcd members healthy", o.Kind, o.Name, o.EtcdHealthy, o.Desired), nil
}

func apiServer(want bool) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
		c, err := providers.NodesOf(p)
		if err != nil {
			return false, "", err
		}
		if err := c.APIServer(ctx, obj); err != nil {
			if ctx.Err() != nil || cutByDeadline(err) {
				// The reading was cut by the end of its own wait: that
				// says nothing about the API server, so it is an error
				// (which waits ignore), not an "unavailable" reading.
				return false, "", fmt.Errorf("reading cut short by the end of its wait: %w", err)
			}
			text := providers.APIErrorText(err)
			detail := "API server unavailable: " + text
			if m := args["message"]; m != "" && !strings.Contains(text, m) {
				// Down, but not for the reason the scenario expects.
				return false, detail + " (does not say " + strconv.Quote(m) + ")", nil
			}
			return !want, detail, nil
		}
		return want, "API server answers", nil
	}
}

// clusterAPIProbes are the named probes over Cluster API Machines.
var clusterAPIProbes = map[string]probeDef{
	"node-not-ready":      {capability: providers.CapNodes, summary: "the target's Node is not Ready (False, Unknown, or gone)", eval: nodeProbe(nodeNotReady)},
	"node-ready":          {capability: providers.CapNodes, summary: "the target's Node is Ready", eval: nodeProbe(nodeReady)},
	"machine-unhealthy":   {capability: providers.CapClusterAPI, summary: "a MachineHealthCheck or KCP marked the Machine unhealthy (or it is gone)", eval: machineProbe(machineUnhealthy)},
	"machine-deleted":     {capability: providers.CapClusterAPI, summary: "the Machine is being deleted or is gone", eval: machineProbe(machineDeleted)},
	"machine-running":     {capability: providers.CapClusterAPI, summary: "the Machine is in phase Running", eval: machineProbe(machineRunning)},
	"replacement-running": {capability: providers.CapClusterAPI, summary: "a Machine that replaced it is Running with a Ready Node", eval: replacementRunning},
	"replacement-created": {capability: providers.CapClusterAPI, args: []string{"nodeMessage", "phase"}, summary: "a Machine replaced it (any phase; with nodeMessage, one whose Node's Ready message contains the text; with phase, one in that phase, e.g. Provisioned: a VM but no Node); count assertions count each new one", ids: replacementsCreated},
	"replicas-restored":   {capability: providers.CapClusterAPI, summary: "the Machine's MachineDeployment or control plane has all its replicas healthy again", eval: ownerProbe(replicasRestored)},
	"etcd-healthy":        {capability: providers.CapClusterAPI, summary: "the Machine's control plane has all its etcd members healthy (KCP's EtcdMemberHealthy)", eval: ownerProbe(etcdHealthy)},
	"api-available":       {capability: providers.CapNodes, summary: "the target's (workload) cluster API server answers", eval: apiServer(true)},
	"api-unavailable":     {capability: providers.CapNodes, args: []string{"message"}, summary: "the target's (workload) cluster API server does not answer (with message: its error says so)", eval: apiServer(false)},
}
