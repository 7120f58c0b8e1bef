package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// probeDef describes one named probe: a yes/no question about one object.
type probeDef struct {
	capability providers.Capability
	args       []string
	summary    string
	eval       func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error)
	// ids, set instead of eval, names the objects that satisfy the probe
	// for obj (the replacements of a Machine): count assertions count
	// each new one.
	ids func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) ([]string, string, error)
	// evalSince, set instead of eval, also gets the time the run started:
	// evidence older than the run (an Event) is not the run's.
	evalSince func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string, since time.Time) (bool, string, error)
	// check, when set, validates the args when the file loads.
	check func(args map[string]string) []scenario.ArgError
}

func powerStateIs(want providers.PowerState) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, _ map[string]string) (bool, string, error) {
		v, err := providers.As[providers.VMPower](p, providers.CapVMPower)
		if err != nil {
			return false, "", err
		}
		state, err := v.PowerState(ctx, obj)
		if err != nil {
			return false, "", err
		}
		return state == want, "power state " + string(state), nil
	}
}

func vmExists(want bool) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, _ map[string]string) (bool, string, error) {
		v, err := providers.As[providers.VMLifecycle](p, providers.CapVMLifecycle)
		if err != nil {
			return false, "", err
		}
		ok, err := v.Exists(ctx, obj)
		if err != nil {
			return false, "", err
		}
		return ok == want, fmt.Sprintf("in inventory: %t", ok), nil
	}
}

func nicConnected(want bool) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
		v, err := providers.As[providers.VMNetwork](p, providers.CapVMNetwork)
		if err != nil {
			return false, "", err
		}
		ok, err := v.NICConnected(ctx, obj, args["nic"])
		if err != nil {
			return false, "", err
		}
		return ok == want, fmt.Sprintf("nic connected: %t", ok), nil
	}
}

// probeCatalogue lists every named probe a condition can use.
var probeCatalogue = mergeMaps(vmProbes, clusterAPIProbes, objectProbes, checkProbes, writeProbes, nodeProbes, rolloutProbes, workloadProbes)

// workloadProbes read a workload's monitor, which only the run has: the
// run evaluates them (run.evaluate), not eval.
var workloadProbes = map[string]probeDef{
	"workload-unavailable": {capability: providers.CapWorkloads, args: []string{"workload", "of"}, eval: byRun,
		summary: "the workload (arg workload) is down in its measure (arg of: requests, the default, or endpoints): reached at the gap's first failed sample"},
	"workload-available": {capability: providers.CapWorkloads, args: []string{"workload", "of"}, eval: byRun,
		summary: "the workload answers in its measure (same args): reached at the first good sample after the last gap"},
}

func byRun(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return false, "", errors.New("a workload probe is read from its run's monitor")
}

// evaluate reads cond once: a workload probe from its monitor, any other
// from the provider.
func (r *run) evaluate(ctx context.Context, cond scenario.Condition, objs []providers.Object) (Observation, error) {
	if _, ok := workloadProbes[cond.Probe]; !ok {
		return evaluate(ctx, r.in.Provider, cond, objs, r.res.StartedAt)
	}
	m := r.monitorOf(cond.Args["workload"])
	if m == nil {
		return Observation{}, fmt.Errorf("workload %s is not watched (it did not start, or its watch is over)", cond.Args["workload"])
	}
	of := scenario.MeasureOf(cond.Args)
	down, since, upto, known := m.series(of).state()
	if !known {
		return Observation{Detail: "workload " + m.w.Name + ": not sampled yet"}, nil
	}
	want := cond.Probe == "workload-unavailable"
	state := "up"
	if down {
		state = "down"
	}
	obs := Observation{Met: down == want, Upto: upto, Detail: fmt.Sprintf("workload %s's %s: %s since %s", m.w.Name, of, state, since.Format("15:04:05.000"))}
	if obs.Met {
		obs.At = since
	}
	return obs, nil
}

// nodeProbes are the named probes over what runs on a Machine's node.
var nodeProbes = map[string]probeDef{
	"static-pod-running": {capability: providers.CapNodeStaticPods, args: []string{"component"}, check: checkComponent,
		summary: "the control-plane static pod (arg component: etcd, kube-apiserver, kube-controller-manager, kube-scheduler) runs on the Machine's node", eval: staticPodRunning(true)},
	"static-pod-stopped": {capability: providers.CapNodeStaticPods, args: []string{"component"}, check: checkComponent,
		summary: "the control-plane static pod no longer runs on the node: the kubelet has stopped it (same arg)", eval: staticPodRunning(false)},
}

func staticPodRunning(want bool) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
		n, err := providers.As[providers.NodeStaticPods](p, providers.CapNodeStaticPods)
		if err != nil {
			return false, "", err
		}
		running, err := n.StaticPodRunning(ctx, obj, args["component"])
		if err != nil {
			return false, "", err
		}
		return running == want, fmt.Sprintf("%s running: %t", args["component"], running), nil
	}
}

// vmProbes are the named probes over vSphere VMs.
var vmProbes = map[string]probeDef{
	"vm-powered-on":       {capability: providers.CapVMPower, summary: "the VM is powered on", eval: powerStateIs(providers.PoweredOn)},
	"vm-powered-off":      {capability: providers.CapVMPower, summary: "the VM is powered off", eval: powerStateIs(providers.PoweredOff)},
	"vm-suspended":        {capability: providers.CapVMPower, summary: "the VM is suspended", eval: powerStateIs(providers.Suspended)},
	"vm-present":          {capability: providers.CapVMLifecycle, summary: "the VM is in the inventory", eval: vmExists(true)},
	"vm-absent":           {capability: providers.CapVMLifecycle, summary: "the VM is gone from the inventory", eval: vmExists(false)},
	"vm-nic-connected":    {capability: providers.CapVMNetwork, args: []string{"nic"}, summary: "the VM's adapter is connected", eval: nicConnected(true)},
	"vm-nic-disconnected": {capability: providers.CapVMNetwork, args: []string{"nic"}, summary: "the VM's adapter is disconnected", eval: nicConnected(false)},
}

// Observation is one reading of a condition.
type Observation struct {
	Met bool
	// Detail says what was seen, per object ("VirtualMachine/vm1: power
	// state poweredOff").
	Detail string
	// Matched lists the IDs of the objects that satisfied the probe; count
	// assertions count distinct IDs.
	Matched []string
	// At, when set, is when the condition began to hold, earlier than the
	// reading (a workload's first failed sample).
	At time.Time
	// Upto, when set, is the time the reading is of, earlier than the
	// reading: a workload's measure is known up to its last sample whose
	// earlier ones have all been answered.
	Upto time.Time
}

// evaluate reads cond once over objs. A missing object counts as not
// satisfying the probe, except for vm-absent, whose probe handles it.
func evaluate(ctx context.Context, p providers.Provider, cond scenario.Condition, objs []providers.Object, runStart time.Time) (Observation, error) {
	def, ok := probeCatalogue[cond.Probe]
	if !ok {
		return Observation{}, fmt.Errorf("unknown probe %q", cond.Probe)
	}
	var obs Observation
	matchedObjs := 0
	details := make([]string, 0, len(objs))
	for _, obj := range objs {
		if def.ids != nil {
			ids, detail, err := def.ids(ctx, p, obj, cond.Args)
			if err != nil {
				return Observation{}, fmt.Errorf("probe %s on %s: %w", cond.Probe, obj, err)
			}
			details = append(details, obj.String()+": "+detail)
			obs.Matched = append(obs.Matched, ids...)
			if len(ids) > 0 {
				matchedObjs++
			}
			continue
		}
		var met bool
		var detail string
		var err error
		if def.evalSince != nil {
			met, detail, err = def.evalSince(ctx, p, obj, cond.Args, runStart)
		} else {
			met, detail, err = def.eval(ctx, p, obj, cond.Args)
		}
		if err != nil {
			if !errors.Is(err, providers.ErrNotFound) {
				return Observation{}, fmt.Errorf("probe %s on %s: %w", cond.Probe, obj, err)
			}
			met, detail = false, "not found"
		}
		details = append(details, obj.String()+": "+detail)
		if met {
			obs.Matched = append(obs.Matched, obj.ID)
			matchedObjs++
		}
	}
	if cond.Any {
		obs.Met = matchedObjs > 0
	} else {
		obs.Met = len(objs) > 0 && matchedObjs == len(objs)
	}
	sort.Strings(details)
	obs.Detail = strings.Join(details, "; ")
	return obs, nil
}
