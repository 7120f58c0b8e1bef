package engine

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// FaultUpgradeManagement is the fault that upgrades the management
// cluster's controllers: a run with it leaves its lab on another release.
const FaultUpgradeManagement = "upgrade.management"

// upgradeFaults are the upgrades a scenario runs as steps: journaled
// before they start, with their stages on the timeline, and never undone
// (neither clusterctl nor kubeadm goes back a release), which each one's
// undo note says.
var upgradeFaults = map[string]faultDef{
	FaultUpgradeManagement: {
		capability: providers.CapManagementUpgrade, params: []string{"release"}, once: true,
		summary: "upgrade the management cluster's Cluster API and CAPV release in place, as `clusterctl upgrade apply` does (param release: a stack's name or CAPI+CAPV versions); not undone",
		injectStaged: func(ctx context.Context, p providers.Provider, _ providers.Object, params map[string]string, stage func(string)) error {
			u, err := providers.As[providers.ManagementUpgrade](p, providers.CapManagementUpgrade)
			if err != nil {
				return err
			}
			return u.UpgradeManagement(ctx, params["release"], stage)
		},
		undo: func(obj providers.Object, params map[string]string) UndoAction {
			return UndoAction{Action: UndoNone, Target: obj, Note: "clusterctl does not downgrade providers: the management cluster stays on " + params["release"]}
		},
		check: func(params map[string]string) []scenario.ArgError {
			if params["release"] == "" {
				return []scenario.ArgError{{Arg: "release", Msg: "required: the release to upgrade to, e.g. v1.13"}}
			}
			return nil
		},
	},
	"upgrade.kubernetes": {
		capability: providers.CapObjectWrites, params: []string{"version", "machines"}, perCluster: true,
		summary:      "roll the target's workload cluster out to another Kubernetes version: the KubeadmControlPlane's spec.version and each MachineDeployment's template (param version; machines: all, control-plane or workers, default all); not undone",
		injectStaged: setKubernetesVersion,
		undo: func(obj providers.Object, params map[string]string) UndoAction {
			return UndoAction{Action: UndoNone, Target: obj, Note: "a rollout is not rolled back (kubeadm does not downgrade): the cluster stays on " + params["version"]}
		},
		check: checkRolloutArgs,
	},
}

// kubernetesVersion is a Kubernetes version as Cluster API takes it.
var kubernetesVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+([-+].*)?$`)

func checkRolloutArgs(args map[string]string) []scenario.ArgError {
	var errs []scenario.ArgError
	if v := args["version"]; !kubernetesVersion.MatchString(v) {
		errs = append(errs, scenario.ArgError{Arg: "version", Msg: fmt.Sprintf("got %q, expected a Kubernetes version such as v1.35.4", v)})
	}
	switch args["machines"] {
	case "", "all", "control-plane", "workers":
	default:
		errs = append(errs, scenario.ArgError{Arg: "machines", Msg: fmt.Sprintf("got %q, expected all, control-plane or workers", args["machines"])})
	}
	return errs
}

// setKubernetesVersion writes version into the KubeadmControlPlane and
// the MachineDeployments of obj's Cluster, as a user starts a rollout.
func setKubernetesVersion(ctx context.Context, p providers.Provider, obj providers.Object, params map[string]string, stage func(string)) error {
	w, err := providers.As[providers.ObjectWriter](p, providers.CapObjectWrites)
	if err != nil {
		return err
	}
	o, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return err
	}
	owners, err := rolloutOwners(ctx, o, obj, params["machines"])
	if err != nil {
		return err
	}
	for _, u := range owners {
		path := versionPath(u)
		if err := unstructured.SetNestedField(u, params["version"], path...); err != nil {
			return err
		}
		if err := w.ApplyObject(ctx, obj, "management", u); err != nil {
			return err
		}
		stage(fmt.Sprintf("%s %s: version %s", u["kind"], name(u), params["version"]))
	}
	return nil
}

// versionPath is where a rollout owner keeps its Machines' version.
func versionPath(u map[string]any) []string {
	if u["kind"] == "KubeadmControlPlane" {
		return []string{"spec", "version"}
	}
	return []string{"spec", "template", "spec", "version"}
}

// rolloutOwners are the KubeadmControlPlane (unless machines is workers)
// and the MachineDeployments (unless control-plane) of obj's Cluster.
func rolloutOwners(ctx context.Context, o providers.Objects, obj providers.Object, machines string) ([]map[string]any, error) {
	ns, cluster := obj.Attributes[providers.AttrNamespace], obj.Attributes[providers.AttrCluster]
	if cluster == "" {
		return nil, fmt.Errorf("%s belongs to no Cluster API Cluster: %w", obj, providers.ErrUnsupported)
	}
	var out []map[string]any
	if machines != "workers" {
		c, err := o.GetObject(ctx, obj, providers.ObjectRef{Cluster: "management", APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Namespace: ns, Name: cluster})
		if err != nil || c == nil {
			return nil, fmt.Errorf("Cluster %s/%s: %w", ns, cluster, errOr(err, providers.ErrNotFound))
		}
		cp, _, _ := unstructured.NestedString(c, "spec", "controlPlaneRef", "name")
		kcp, err := o.GetObject(ctx, obj, providers.ObjectRef{Cluster: "management", APIVersion: "controlplane.cluster.x-k8s.io/v1beta2", Kind: "KubeadmControlPlane", Namespace: ns, Name: cp})
		if err != nil || kcp == nil {
			return nil, fmt.Errorf("KubeadmControlPlane %s/%s of Cluster %s: %w", ns, cp, cluster, errOr(err, providers.ErrNotFound))
		}
		out = append(out, kcp)
	}
	if machines != "control-plane" {
		mds, err := o.ListObjects(ctx, obj, providers.ObjectRef{Cluster: "management", APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "MachineDeployment", Namespace: ns})
		if err != nil {
			return nil, err
		}
		for _, md := range mds {
			if c, _, _ := unstructured.NestedString(md, "spec", "clusterName"); c == cluster {
				out = append(out, md)
			}
		}
	}
	return out, nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

func name(u map[string]any) string {
	n, _, _ := unstructured.NestedString(u, "metadata", "name")
	return n
}

// rolloutProbes are the probes over a rollout of the target's Cluster
// and over what a controller upgrade must leave alone.
var rolloutProbes = map[string]probeDef{
	"machines-at-version": {capability: providers.CapObjects, args: []string{"version", "count", "machines"}, check: checkAtVersionArgs,
		summary: "at least count Machines of the target's Cluster (machines: all, control-plane or workers) run version: Running, not deleting (count 1 with control-plane: KCP has replaced one control plane)", eval: machinesAtVersion(false)},
	"rollout-complete": {capability: providers.CapObjects, args: []string{"version", "machines"}, check: checkAtVersionArgs,
		summary: "every Machine of the target's Cluster (machines: all, control-plane or workers) runs version, as many as their owners want, and none of another version is left", eval: machinesAtVersion(true)},
	"machine-unchanged": {capability: providers.CapObjects,
		summary: "the target's Machine was not rolled out since the run resolved it: the same object (UID), not deleting, the same version, and its KubeadmControlPlane's or MachineDeployment's generation unchanged (Cluster API's post-upgrade checks)", eval: machineUnchanged},
}

func checkAtVersionArgs(args map[string]string) []scenario.ArgError {
	errs := checkRolloutArgs(args)
	if c := args["count"]; c != "" {
		if n, err := strconv.Atoi(c); err != nil || n < 1 {
			errs = append(errs, scenario.ArgError{Arg: "count", Msg: fmt.Sprintf("got %q, expected a whole number of Machines, 1 or more", c)})
		}
	}
	return errs
}

// machinesAtVersion counts the Machines of the target's Cluster at the
// version: with all, every one must be, as many as their owners want.
func machinesAtVersion(all bool) func(context.Context, providers.Provider, providers.Object, map[string]string) (bool, string, error) {
	return func(ctx context.Context, p providers.Provider, obj providers.Object, args map[string]string) (bool, string, error) {
		o, err := providers.As[providers.Objects](p, providers.CapObjects)
		if err != nil {
			return false, "", err
		}
		ms, err := clusterMachines(ctx, o, obj, args["machines"])
		if err != nil {
			return false, "", err
		}
		at, other := 0, 0
		for _, m := range ms {
			v, _, _ := unstructured.NestedString(m, "spec", "version")
			phase, _, _ := unstructured.NestedString(m, "status", "phase")
			switch {
			case v == args["version"] && phase == "Running" && !deleting(m):
				at++
			case v != args["version"]:
				other++
			}
		}
		detail := fmt.Sprintf("%d Machines Running %s, %d of another version", at, args["version"], other)
		if !all {
			want := 1
			if c := args["count"]; c != "" {
				want, _ = strconv.Atoi(c)
			}
			return at >= want, detail, nil
		}
		want, err := desiredReplicas(ctx, o, obj, args["machines"])
		if err != nil {
			return false, "", err
		}
		return other == 0 && at >= want, fmt.Sprintf("%s, %d wanted", detail, want), nil
	}
}

// clusterMachines are the Machines of obj's Cluster, of the role
// machines names.
func clusterMachines(ctx context.Context, o providers.Objects, obj providers.Object, machines string) ([]map[string]any, error) {
	ns, cluster := obj.Attributes[providers.AttrNamespace], obj.Attributes[providers.AttrCluster]
	all, err := o.ListObjects(ctx, obj, providers.ObjectRef{Cluster: "management", APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Machine", Namespace: ns})
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, m := range all {
		labels, _, _ := unstructured.NestedStringMap(m, "metadata", "labels")
		if labels["cluster.x-k8s.io/cluster-name"] != cluster {
			continue
		}
		_, cp := labels["cluster.x-k8s.io/control-plane"]
		if (machines == "control-plane" && !cp) || (machines == "workers" && cp) {
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// desiredReplicas is how many Machines the rollout's owners want.
func desiredReplicas(ctx context.Context, o providers.Objects, obj providers.Object, machines string) (int, error) {
	owners, err := rolloutOwners(ctx, o, obj, machines)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, u := range owners {
		r, ok, _ := unstructured.NestedInt64(u, "spec", "replicas")
		if !ok {
			r = 1
		}
		n += int(r)
	}
	return n, nil
}

func deleting(u map[string]any) bool {
	ts, _, _ := unstructured.NestedString(u, "metadata", "deletionTimestamp")
	return ts != ""
}

// ownerOf is the relatedObjects entry of each owner kind a Machine's
// AttrOwnerKind names.
var ownerOf = map[string]string{"KubeadmControlPlane": "controlPlane", "MachineDeployment": "machineDeployment"}

// machineUnchanged holds while the target's Machine is the object the run
// resolved, at its version, and its owner's spec was not changed.
func machineUnchanged(ctx context.Context, p providers.Provider, obj providers.Object, _ map[string]string) (bool, string, error) {
	o, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return false, "", err
	}
	mref, err := relatedObjects["machine"](obj)
	if err != nil {
		return false, "", err
	}
	m, err := o.GetObject(ctx, obj, mref)
	if err != nil {
		return false, "", err
	}
	if m == nil {
		return false, "Machine gone", nil
	}
	if uid, _, _ := unstructured.NestedString(m, "metadata", "uid"); obj.ID != "" && uid != obj.ID {
		return false, "Machine recreated (UID " + uid + ", was " + obj.ID + ")", nil
	}
	if deleting(m) {
		return false, "Machine deleting", nil
	}
	if v, _, _ := unstructured.NestedString(m, "spec", "version"); v != obj.Attributes[providers.AttrVersion] {
		return false, "version " + v + ", was " + obj.Attributes[providers.AttrVersion], nil
	}
	kind, owner, was := obj.Attributes[providers.AttrOwnerKind], obj.Attributes[providers.AttrOwner], obj.Attributes[providers.AttrOwnerGeneration]
	if was == "" || ownerOf[kind] == "" {
		return true, "Machine unchanged", nil
	}
	ref, err := relatedObjects[ownerOf[kind]](obj)
	if err != nil {
		return false, "", err
	}
	u, err := o.GetObject(ctx, obj, ref)
	if err != nil {
		return false, "", err
	}
	if u == nil {
		return false, kind + " " + owner + " gone", nil
	}
	g, _, _ := unstructured.NestedInt64(u, "metadata", "generation")
	if strconv.FormatInt(g, 10) != was {
		return false, fmt.Sprintf("%s %s generation %d, was %s (its spec was changed)", kind, owner, g, was), nil
	}
	return true, fmt.Sprintf("Machine unchanged, %s %s generation %s", kind, owner, was), nil
}
