package engine

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// writeProbes are the probes that ask the API server what it would do.
var writeProbes = map[string]probeDef{
	"create-refused": {capability: providers.CapObjectWrites, args: []string{"cluster", "manifest", "message"}, check: checkDryRunArgs,
		summary: "a server-side dry-run create of the manifest's object fails with a message containing the text: a webhook that refuses or cannot be reached (args: cluster, default workload; manifest, one object; message)", eval: dryRunCreate(false)},
	"create-admitted": {capability: providers.CapObjectWrites, args: []string{"cluster", "manifest"}, check: checkDryRunArgs,
		summary: "a server-side dry-run create of the manifest's object succeeds (same args)", eval: dryRunCreate(true)},
}

func checkDryRunArgs(args map[string]string) []scenario.ArgError {
	objs, err := parseManifest(args["manifest"])
	if err != nil {
		return []scenario.ArgError{{Arg: "manifest", Msg: err.Error()}}
	}
	if len(objs) != 1 {
		return []scenario.ArgError{{Arg: "manifest", Msg: fmt.Sprintf("got %d objects, expected one", len(objs))}}
	}
	return checkClusterParam(args)
}

// dryRunCreate holds when the API server would create the object (want
// true), or refuses it with the message (want false).
func dryRunCreate(want bool) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
		w, err := providers.As[providers.ObjectWriter](p, providers.CapObjectWrites)
		if err != nil {
			return false, "", err
		}
		objs, err := parseManifest(args["manifest"])
		if err != nil {
			return false, "", err
		}
		cluster := args["cluster"]
		if cluster == "" {
			cluster = "workload"
		}
		u := objs[0]
		what := fmt.Sprintf("dry-run create of %v %v", u["kind"], (&unstructured.Unstructured{Object: u}).GetName())
		err = w.DryRunCreate(ctx, obj, cluster, u)
		if err == nil {
			return want, what + ": admitted", nil
		}
		if ctx.Err() != nil {
			return false, "", err
		}
		return !want && strings.Contains(err.Error(), args["message"]), what + ": " + err.Error(), nil
	}
}

// plan records what each inject step would do, and where.
func (r *run) plan(sc *scenario.Scenario) {
	for _, w := range sc.Spec.Workloads {
		pf := PlannedFault{Step: "workload/" + w.Name, Fault: "workload", Target: w.Target}
		if objs := r.objects[w.Target]; len(objs) > 0 {
			pf.Objects = []string{objs[0].String()}
		}
		r.res.Planned = append(r.res.Planned, pf)
	}
	for _, st := range sc.Spec.Steps {
		if st.Inject == nil {
			continue
		}
		pf := PlannedFault{Step: st.Name, Fault: st.Inject.Fault, Target: st.Inject.Target}
		for _, o := range r.faultObjects(*st.Inject) {
			pf.Objects = append(pf.Objects, o.String())
		}
		r.res.Planned = append(r.res.Planned, pf)
	}
}
