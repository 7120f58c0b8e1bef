package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// paramBackups is the param the runner adds to faults that keep backups:
// the folder they write them to, recorded in the journal for the undo.
const paramBackups = "backups"

// objectFaults are the faults on Kubernetes objects.
var objectFaults = map[string]faultDef{
	"object.apply": {
		capability: providers.CapObjectWrites, params: []string{"cluster", "manifest"}, backups: true, standalone: true,
		summary: "create or replace the objects of a YAML manifest; undo deletes the ones it created and restores the ones it replaced from their backups",
		inject:  applyManifest,
		undo: func(obj providers.Object, params map[string]string) UndoAction {
			return UndoAction{Action: "object.revert-apply", Target: obj, Params: params}
		},
		check: func(params map[string]string) []scenario.ArgError {
			if _, err := parseManifest(params["manifest"]); err != nil {
				return []scenario.ArgError{{Arg: "manifest", Msg: err.Error()}}
			}
			return checkClusterParam(params)
		},
	},
	"object.delete": {
		capability: providers.CapObjectWrites, params: []string{"cluster", "apiVersion", "kind", "namespace", "name"}, backups: true, standalone: true,
		summary: "back up an object to a file, then delete it (a runbook step such as seed 000's); undo recreates it from the backup and checks it is byte for byte what it was",
		inject:  deleteWithBackup,
		undo: func(obj providers.Object, params map[string]string) UndoAction {
			ref := refFromParams(params)
			return UndoAction{Action: "object.restore", Target: obj, Params: map[string]string{"cluster": ref.Cluster, "file": backupFile(params[paramBackups], ref)}}
		},
		check: func(params map[string]string) []scenario.ArgError { return checkObjectArgs(params) },
	},
	"object.scale": scaleFault,
}

var objectUndos = map[string]func(ctx context.Context, p providers.Provider, u UndoAction) error{
	"object.revert-apply": revertApply,
	"object.unscale":      unscale,
	"object.restore": func(ctx context.Context, p providers.Provider, u UndoAction) error {
		return restoreBackup(ctx, p, u.Target, u.Params["cluster"], u.Params["file"])
	},
}

func checkClusterParam(params map[string]string) []scenario.ArgError {
	if c := params["cluster"]; c != "" && c != "management" && c != "workload" {
		return []scenario.ArgError{{Arg: "cluster", Msg: fmt.Sprintf("got %q, expected management or workload", c)}}
	}
	return nil
}

// refFromParams is refFromArgs for faults, whose objects are in the
// workload cluster unless told otherwise.
func refFromParams(params map[string]string) providers.ObjectRef {
	ref := refFromArgs(params)
	if params["cluster"] == "" {
		ref.Cluster = "workload"
	}
	return ref
}

func paramCluster(params map[string]string) string {
	if c := params["cluster"]; c != "" {
		return c
	}
	return "workload"
}

// parseManifest reads one or more YAML documents, each an object with
// apiVersion, kind and metadata.name.
func parseManifest(text string) ([]map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("required: one or more YAML documents, each a Kubernetes object")
	}
	dec := yamlv3.NewDecoder(strings.NewReader(text))
	var out []map[string]any
	for i := 1; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if doc == nil {
			continue
		}
		// As the API machinery holds objects: integers as int64.
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		doc = nil
		if err := utiljson.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		meta, _ := doc["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if doc["apiVersion"] == nil || doc["kind"] == nil || name == "" {
			return nil, fmt.Errorf("document %d: an object needs apiVersion, kind and metadata.name", i)
		}
		out = append(out, doc)
	}
	if len(out) == 0 {
		return nil, errors.New("required: one or more YAML documents, each a Kubernetes object")
	}
	return out, nil
}

func objectRef(cluster string, o map[string]any) providers.ObjectRef {
	meta, _ := o["metadata"].(map[string]any)
	ref := providers.ObjectRef{Cluster: cluster}
	ref.APIVersion, _ = o["apiVersion"].(string)
	ref.Kind, _ = o["kind"].(string)
	ref.Namespace, _ = meta["namespace"].(string)
	ref.Name, _ = meta["name"].(string)
	return ref
}

// applyManifest backs up every object the manifest would replace, then
// creates or replaces each.
func applyManifest(ctx context.Context, p providers.Provider, scope providers.Object, params map[string]string) error {
	w, err := providers.As[providers.ObjectWriter](p, providers.CapObjectWrites)
	if err != nil {
		return err
	}
	objs, err := parseManifest(params["manifest"])
	if err != nil {
		return err
	}
	cluster := paramCluster(params)
	for _, o := range objs {
		ref := objectRef(cluster, o)
		// An object still being deleted (an earlier run's namespace, say)
		// can be neither backed up nor replaced: its namespace refuses new
		// content until it is gone.
		if err := waitGone(ctx, p, scope, []providers.ObjectRef{ref}, true); err != nil {
			return err
		}
		if _, err := writeBackup(ctx, p, scope, ref, params[paramBackups]); err != nil {
			return err
		}
	}
	for _, o := range objs {
		if err := w.ApplyObject(ctx, scope, cluster, o); err != nil {
			return fmt.Errorf("apply %s: %w", objectRef(cluster, o), err)
		}
	}
	return nil
}

// revertApply restores the objects an apply replaced and deletes the ones
// it created, in reverse order.
func revertApply(ctx context.Context, p providers.Provider, u UndoAction) error {
	w, err := providers.As[providers.ObjectWriter](p, providers.CapObjectWrites)
	if err != nil {
		return err
	}
	objs, err := parseManifest(u.Params["manifest"])
	if err != nil {
		return err
	}
	cluster := paramCluster(u.Params)
	var errs []error
	var deleted []providers.ObjectRef
	for i := len(objs) - 1; i >= 0; i-- {
		ref := objectRef(cluster, objs[i])
		file := backupFile(u.Params[paramBackups], ref)
		if _, err := os.Stat(file); err == nil {
			errs = append(errs, restoreBackup(ctx, p, u.Target, cluster, file))
			continue
		}
		if err := w.DeleteObject(ctx, u.Target, ref); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", ref, err))
			continue
		}
		deleted = append(deleted, ref)
	}
	// The undo is done when the objects are gone, not when their deletion
	// began: a namespace stays Terminating until its content is deleted,
	// and the next scenario may create it again.
	errs = append(errs, waitGone(ctx, p, u.Target, deleted, false))
	return errors.Join(errs...)
}

// goneWithin bounds the wait for a deleted object to be gone.
const goneWithin = 2 * time.Minute

// waitGone waits until none of refs exists, or, with onlyTerminating, until
// none of them exists with a deletion under way.
func waitGone(ctx context.Context, p providers.Provider, scope providers.Object, refs []providers.ObjectRef, onlyTerminating bool) error {
	if len(refs) == 0 {
		return nil
	}
	r, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return err
	}
	var left providers.ObjectRef
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, goneWithin, true, func(ctx context.Context) (bool, error) {
		for _, ref := range refs {
			o, err := r.GetObject(ctx, scope, ref)
			if err != nil {
				return false, err
			}
			if o == nil {
				continue
			}
			meta, _ := o["metadata"].(map[string]any)
			if onlyTerminating && meta["deletionTimestamp"] == nil {
				continue
			}
			left = ref
			return false, nil
		}
		return true, nil
	})
	if err != nil && left != (providers.ObjectRef{}) {
		return fmt.Errorf("waiting for %s to be gone: %w", left, err)
	}
	return err
}

// deleteWithBackup writes the object's backup, then deletes it. A missing
// object is an error: the runbook step had nothing to act on.
func deleteWithBackup(ctx context.Context, p providers.Provider, scope providers.Object, params map[string]string) error {
	w, err := providers.As[providers.ObjectWriter](p, providers.CapObjectWrites)
	if err != nil {
		return err
	}
	ref, err := backUp(ctx, p, scope, params, "delete")
	if err != nil {
		return err
	}
	return w.DeleteObject(ctx, scope, ref)
}

// backUp writes the backup of the object params name. A missing object is
// an error: the fault has nothing to act on (verb says what it would do).
func backUp(ctx context.Context, p providers.Provider, scope providers.Object, params map[string]string, verb string) (providers.ObjectRef, error) {
	ref := refFromParams(params)
	ok, err := writeBackup(ctx, p, scope, ref, params[paramBackups])
	if err != nil {
		return ref, err
	}
	if !ok {
		return ref, fmt.Errorf("%s: nothing to %s: %w", ref, verb, providers.ErrNotFound)
	}
	return ref, nil
}

// changedSince tells, before recover undoes an object fault, whether the
// objects it would write changed since the fault: one object.delete
// removed that exists again, or one object.apply wrote whose fields no
// longer hold what it wrote. Undoing would then overwrite someone's newer
// change, which recover does only when the entry is forced. Other undos
// check their target themselves (a VM already on is not powered on).
func changedSince(ctx context.Context, p providers.Provider, u UndoAction) error {
	if u.Action == "object.unscale" {
		return scaledSince(ctx, p, u)
	}
	if u.Action != "object.restore" && u.Action != "object.revert-apply" {
		return nil
	}
	r, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return err
	}
	if u.Action == "object.restore" {
		o, _, err := readBackup(u.Params["file"])
		if err != nil {
			return err
		}
		ref := objectRef(u.Params["cluster"], o)
		now, err := r.GetObject(ctx, u.Target, ref)
		if err != nil {
			return fmt.Errorf("read %s: %w", ref, err)
		}
		if now != nil {
			return fmt.Errorf("%s exists again (made since the fault deleted it): restoring %s would replace it", ref, u.Params["file"])
		}
		return nil
	}
	objs, err := parseManifest(u.Params["manifest"])
	if err != nil {
		return err
	}
	cluster := paramCluster(u.Params)
	for _, o := range objs {
		ref := objectRef(cluster, o)
		now, err := r.GetObject(ctx, u.Target, ref)
		if err != nil {
			return fmt.Errorf("read %s: %w", ref, err)
		}
		if now != nil && !holds(cleanObject(now), cleanObject(o)) {
			return fmt.Errorf("%s changed since the fault applied it: reverting would overwrite the change", ref)
		}
	}
	return nil
}

// holds tells whether every field want sets has the same value in got
// (what the API server or a webhook added to got is not a change).
func holds(got, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(got, want)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, w := range wm {
		if !holds(gm[k], w) {
			return false
		}
	}
	return true
}
