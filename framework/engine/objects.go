package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"

	"github.com/faultline-dev/faultline/framework/check"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// objectArgs are the arguments every object probe takes.
var objectArgs = []string{"cluster", "apiVersion", "kind", "namespace", "name", "of"}

// relatedObjects are what `of` names: an object related to each object of
// the probe's target (a Cluster API Machine), in place of apiVersion,
// kind, namespace and name.
var relatedObjects = map[string]func(providers.Object) (providers.ObjectRef, error){
	"machine": func(o providers.Object) (providers.ObjectRef, error) {
		if o.Kind != "Machine" {
			return providers.ObjectRef{}, fmt.Errorf("%s is not a Cluster API Machine", o)
		}
		return providers.ObjectRef{Cluster: "management", APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Machine", Namespace: o.Attributes[providers.AttrNamespace], Name: o.Name}, nil
	},
	"node": func(o providers.Object) (providers.ObjectRef, error) {
		if o.Kind == "Node" {
			return providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Node", Name: o.Name}, nil
		}
		// A Machine with no Node yet reads as its Node absent.
		return providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Node", Name: o.Attributes[providers.AttrNode]}, nil
	},
	"bootstrapConfig": func(o providers.Object) (providers.ObjectRef, error) {
		group, rest, _ := strings.Cut(o.Attributes[providers.AttrBootstrapConfig], "/")
		kind, name, _ := strings.Cut(rest, "/")
		if name == "" {
			return providers.ObjectRef{}, fmt.Errorf("%s has no bootstrap configuration", o)
		}
		// Cluster API's bootstrap contract is v1beta2 from v1.11 on;
		// CABPK serves its KubeadmConfig in it.
		return providers.ObjectRef{Cluster: "management", APIVersion: group + "/v1beta2", Kind: kind, Namespace: o.Attributes[providers.AttrNamespace], Name: name}, nil
	},
	"controlPlane":      ownerRef("KubeadmControlPlane", "controlplane.cluster.x-k8s.io/v1beta2"),
	"machineDeployment": ownerRef("MachineDeployment", "cluster.x-k8s.io/v1beta2"),
	"cluster": func(o providers.Object) (providers.ObjectRef, error) {
		c := o.Attributes[providers.AttrCluster]
		if c == "" || o.Kind != "Machine" {
			return providers.ObjectRef{}, fmt.Errorf("%s belongs to no Cluster API Cluster", o)
		}
		return providers.ObjectRef{Cluster: "management", APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Namespace: o.Attributes[providers.AttrNamespace], Name: c}, nil
	},
}

// ownerRef is `of` for the owner of a Machine of one kind.
func ownerRef(kind, apiVersion string) func(providers.Object) (providers.ObjectRef, error) {
	return func(o providers.Object) (providers.ObjectRef, error) {
		if o.Attributes[providers.AttrOwnerKind] != kind {
			return providers.ObjectRef{}, fmt.Errorf("%s is not owned by a %s", o, kind)
		}
		return providers.ObjectRef{Cluster: "management", APIVersion: apiVersion, Kind: kind, Namespace: o.Attributes[providers.AttrNamespace], Name: o.Attributes[providers.AttrOwner]}, nil
	}
}

// refFor is the object a probe reads for one object of its target: the
// one its args name, or the one `of` relates to obj.
func refFor(obj providers.Object, args map[string]string) (providers.ObjectRef, error) {
	if of := args["of"]; of != "" {
		return relatedObjects[of](obj)
	}
	return refFromArgs(args), nil
}

func refFromArgs(args map[string]string) providers.ObjectRef {
	c := args["cluster"]
	if c == "" {
		c = "management"
	}
	return providers.ObjectRef{Cluster: c, APIVersion: args["apiVersion"], Kind: args["kind"], Namespace: args["namespace"], Name: args["name"]}
}

// checkObjectArgs is the load-time check of an object probe's arguments.
func checkObjectArgs(args map[string]string) []scenario.ArgError {
	var errs []scenario.ArgError
	if of := args["of"]; of != "" {
		if _, ok := relatedObjects[of]; !ok {
			errs = append(errs, scenario.ArgError{Arg: "of", Msg: fmt.Sprintf("got %q, expected one of %s", of, strings.Join(slices.Sorted(maps.Keys(relatedObjects)), ", "))})
		}
		for _, k := range []string{"cluster", "apiVersion", "kind", "namespace", "name"} {
			if args[k] != "" {
				errs = append(errs, scenario.ArgError{Arg: k, Msg: "of names the object already; leave " + k + " out"})
			}
		}
		return errs
	}
	for _, k := range []string{"apiVersion", "kind", "name"} {
		if args[k] == "" {
			errs = append(errs, scenario.ArgError{Arg: k, Msg: "required"})
		}
	}
	if c := args["cluster"]; c != "" && c != "management" && c != "workload" {
		errs = append(errs, scenario.ArgError{Arg: "cluster", Msg: fmt.Sprintf("got %q, expected management or workload", c)})
	}
	return errs
}

func readObject(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (map[string]any, providers.ObjectRef, error) {
	o, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return nil, providers.ObjectRef{}, err
	}
	ref, err := refFor(obj, args)
	if err != nil || ref.Name == "" {
		if ref.Name == "" && err == nil {
			ref.Name = "(none of " + obj.String() + ")"
		}
		return nil, ref, err
	}
	u, err := o.GetObject(ctx, obj, ref)
	return u, ref, err
}

func objectPresent(want bool) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
		u, ref, err := readObject(ctx, p, obj, args)
		if err != nil {
			return false, "", err
		}
		if u == nil {
			return !want, ref.String() + " absent", nil
		}
		return want, ref.String() + " present" + metaStamps(u), nil
	}
}

// objectCondition holds when status.conditions has the type with the
// status (default True) and, when given, the reason.
func objectCondition(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
	u, ref, err := readObject(ctx, p, obj, args)
	if err != nil {
		return false, "", err
	}
	if u == nil {
		return false, ref.String() + " absent", nil
	}
	wantStatus := args["status"]
	if wantStatus == "" {
		wantStatus = "True"
	}
	m := check.Condition(u, args["type"])
	if m == nil {
		return false, fmt.Sprintf("%s: no condition %s", ref, args["type"]), nil
	}
	detail := fmt.Sprintf("%s: %s=%v reason %v", ref, args["type"], m["status"], m["reason"])
	if msg, _ := m["message"].(string); msg != "" {
		detail += " (" + msg + ")"
	}
	if t, _ := m["lastTransitionTime"].(string); t != "" {
		detail += " [lastTransitionTime " + t + "]"
	}
	ok := m["status"] == wantStatus && (args["reason"] == "" || m["reason"] == args["reason"])
	return ok, detail, nil
}

func checkConditionArgs(args map[string]string) []scenario.ArgError {
	errs := checkObjectArgs(args)
	if args["type"] == "" {
		errs = append(errs, scenario.ArgError{Arg: "type", Msg: "required: the condition type, such as Ready"})
	}
	if s := args["status"]; s != "" && s != "True" && s != "False" && s != "Unknown" {
		errs = append(errs, scenario.ArgError{Arg: "status", Msg: fmt.Sprintf("got %q, expected True, False or Unknown", s)})
	}
	return errs
}

// celEnv declares `object`, the object read, for object-expression.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("object", cel.DynType))
})

var celPrograms sync.Map // expression -> cel.Program

// compileExpression compiles a CEL expression that must yield a bool.
func compileExpression(expr string) (cel.Program, error) {
	if p, ok := celPrograms.Load(expr); ok {
		return p.(cel.Program), nil
	}
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("yields %s, expected a bool", ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, err
	}
	celPrograms.Store(expr, prg)
	return prg, nil
}

func checkExpressionArgs(args map[string]string) []scenario.ArgError {
	errs := checkObjectArgs(args)
	if args["expression"] == "" {
		return append(errs, scenario.ArgError{Arg: "expression", Msg: "required: a CEL expression over object, such as object.status.readyReplicas == 3"})
	}
	if _, err := compileExpression(args["expression"]); err != nil {
		errs = append(errs, scenario.ArgError{Arg: "expression", Msg: "does not compile: " + err.Error()})
	}
	return errs
}

// objectExpression holds when the CEL expression over the object is true.
// An absent object does not hold; an expression that cannot be evaluated on
// it (a field not there yet) does not hold either, and says why.
func objectExpression(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
	u, ref, err := readObject(ctx, p, obj, args)
	if err != nil {
		return false, "", err
	}
	if u == nil {
		return false, ref.String() + " absent", nil
	}
	prg, err := compileExpression(args["expression"])
	if err != nil {
		return false, "", fmt.Errorf("expression %q: %w", args["expression"], err)
	}
	out, _, err := prg.Eval(map[string]any{"object": u})
	if err != nil {
		return false, fmt.Sprintf("%s: %s: %v", ref, args["expression"], err), nil
	}
	ok, isBool := out.Value().(bool)
	if !isBool {
		return false, "", fmt.Errorf("expression %q yields %T, expected a bool", args["expression"], out.Value())
	}
	return ok, fmt.Sprintf("%s: %s is %t%s", ref, args["expression"], ok, metaStamps(u)), nil
}

func metaStamps(u map[string]any) string {
	meta, _ := u["metadata"].(map[string]any)
	var parts []string
	for _, k := range []string{"creationTimestamp", "deletionTimestamp"} {
		if v, _ := meta[k].(string); v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

// objectProbes are the probes over any object.
var objectProbes = map[string]probeDef{
	"object-present": {capability: providers.CapObjects, args: objectArgs, check: checkObjectArgs,
		summary: "an object exists (args: cluster, apiVersion, kind, namespace, name; or of: machine, node, bootstrapConfig, controlPlane, machineDeployment or cluster, the object related to each of the target's)", eval: objectPresent(true)},
	"object-absent": {capability: providers.CapObjects, args: objectArgs, check: checkObjectArgs,
		summary: "an object does not exist (same args)", eval: objectPresent(false)},
	"object-condition": {capability: providers.CapObjects, args: append(append([]string{}, objectArgs...), "type", "status", "reason"), check: checkConditionArgs,
		summary: "an object's status.conditions has type with status (default True) and reason", eval: objectCondition},
	"object-expression": {capability: providers.CapObjects, args: append(append([]string{}, objectArgs...), "expression"), check: checkExpressionArgs,
		summary: "a CEL expression over `object` is true (compiled when the file loads)", eval: objectExpression},
	"event": {capability: providers.CapObjects, args: []string{"cluster", "namespace", "reason", "message", "involvedKind", "involvedName"}, check: checkEventArgs,
		summary: "an Event with the reason and a message containing the text was recorded since the run started (args: cluster, default workload; namespace, reason, message, involvedKind, involvedName)", evalSince: eventRecorded},
}

func checkEventArgs(args map[string]string) []scenario.ArgError {
	var errs []scenario.ArgError
	if args["reason"] == "" && args["message"] == "" {
		errs = append(errs, scenario.ArgError{Arg: "message", Msg: "required: a reason, a message text, or both"})
	}
	if c := args["cluster"]; c != "" && c != "management" && c != "workload" {
		errs = append(errs, scenario.ArgError{Arg: "cluster", Msg: fmt.Sprintf("got %q, expected management or workload", c)})
	}
	return errs
}

// eventRecorded holds when an Event matches: the evidence seed 000 quotes
// ("failed calling webhook ... connection refused") is an Event's message.
func eventRecorded(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string, since time.Time) (bool, string, error) {
	o, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return false, "", err
	}
	cluster := args["cluster"]
	if cluster == "" {
		cluster = "workload"
	}
	events, err := o.ListObjects(ctx, obj, providers.ObjectRef{Cluster: cluster, APIVersion: "v1", Kind: "Event", Namespace: args["namespace"]})
	if err != nil {
		return false, "", err
	}
	old := 0
	for _, e := range events {
		if at := eventTime(e); !since.IsZero() && !at.IsZero() && at.Before(since.Truncate(time.Second)) {
			old++ // recorded before this run: not its evidence
			continue
		}
		reason, _ := e["reason"].(string)
		msg, _ := e["message"].(string)
		involved, _ := e["involvedObject"].(map[string]any)
		kind, _ := involved["kind"].(string)
		name, _ := involved["name"].(string)
		if (args["reason"] == "" || reason == args["reason"]) && strings.Contains(msg, args["message"]) &&
			(args["involvedKind"] == "" || kind == args["involvedKind"]) && (args["involvedName"] == "" || name == args["involvedName"]) {
			detail := fmt.Sprintf("Event %s on %s %s: %s", reason, kind, name, msg)
			if n, ok := e["count"].(int64); ok && n > 1 {
				detail += fmt.Sprintf(" (x%d)", n)
			}
			return true, detail, nil
		}
	}
	detail := fmt.Sprintf("no matching Event among %d", len(events)-old)
	if old > 0 {
		detail += fmt.Sprintf(" (%d older than the run ignored)", old)
	}
	return false, detail, nil
}

// eventTime is when an Event was last seen: lastTimestamp, else
// eventTime, else its creation.
func eventTime(e map[string]any) time.Time {
	meta, _ := e["metadata"].(map[string]any)
	for _, v := range []any{e["lastTimestamp"], e["eventTime"], meta["creationTimestamp"]} {
		if s, ok := v.(string); ok {
			for _, layout := range []string{time.RFC3339Nano, time.RFC3339} {
				if t, err := time.Parse(layout, s); err == nil {
					return t
				}
			}
		}
	}
	return time.Time{}
}
