package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// scaleFault sets the replicas of an object that has them: an application
// scaled to zero for a known time, or a controller's Deployment stopped.
var scaleFault = faultDef{
	capability: providers.CapObjectWrites, params: []string{"cluster", "apiVersion", "kind", "namespace", "name", "replicas"}, backups: true, standalone: true,
	summary: "back up an object with spec.replicas (a Deployment, StatefulSet, MachineDeployment) to a file, then set its replicas; undo sets back the count the backup holds",
	inject:  scaleWithBackup,
	undo: func(obj providers.Object, params map[string]string) UndoAction {
		ref := refFromParams(params)
		return UndoAction{Action: "object.unscale", Target: obj, Params: map[string]string{
			"cluster": ref.Cluster, "file": backupFile(params[paramBackups], ref), "replicas": params["replicas"],
		}}
	},
	check: func(params map[string]string) []scenario.ArgError {
		errs := checkObjectArgs(params)
		if _, err := parseReplicas(params["replicas"]); err != nil {
			errs = append(errs, scenario.ArgError{Arg: "replicas", Msg: err.Error()})
		}
		return errs
	},
}

func parseReplicas(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("got %q, expected a whole number of replicas, 0 or more", s)
	}
	return n, nil
}

// scaleWithBackup writes the object's backup, then sets its replicas. An
// object without spec.replicas is an error: there is nothing to scale.
func scaleWithBackup(ctx context.Context, p providers.Provider, scope providers.Object, params map[string]string) error {
	n, err := parseReplicas(params["replicas"])
	if err != nil {
		return err
	}
	ref, err := backUp(ctx, p, scope, params, "scale")
	if err != nil {
		return err
	}
	o, _, err := readBackup(backupFile(params[paramBackups], ref))
	if err != nil {
		return err
	}
	if _, err := replicasOf(o); err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	return setReplicas(ctx, p, scope, ref, n)
}

// unscale sets the replicas back to the count of the backup.
func unscale(ctx context.Context, p providers.Provider, u UndoAction) error {
	o, n, scaled, err := backupReplicas(u.Params["file"])
	if err != nil || !scaled {
		return err
	}
	return setReplicas(ctx, p, u.Target, objectRef(u.Params["cluster"], o), n)
}

// backupReplicas reads a scale fault's backup and the count it holds.
// The fault scales only after its backup is written and holds
// spec.replicas: with no backup, or one without replicas, it changed
// nothing (scaled is false) and there is nothing to undo.
func backupReplicas(file string) (o map[string]any, n int64, scaled bool, err error) {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if o, _, err = readBackup(file); err != nil {
		return nil, 0, false, err
	}
	if n, err = replicasOf(o); err != nil {
		return o, 0, false, nil
	}
	return o, n, true, nil
}

// replicasOf reads spec.replicas.
func replicasOf(o map[string]any) (int64, error) {
	spec, _ := o["spec"].(map[string]any)
	switch n := spec["replicas"].(type) {
	case int64:
		return n, nil
	case float64:
		return int64(n), nil
	}
	return 0, errors.New("no spec.replicas to scale")
}

// setReplicas replaces the object as it reads now with spec.replicas set
// to n.
func setReplicas(ctx context.Context, p providers.Provider, scope providers.Object, ref providers.ObjectRef, n int64) error {
	r, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return err
	}
	w, err := providers.As[providers.ObjectWriter](p, providers.CapObjectWrites)
	if err != nil {
		return err
	}
	o, err := r.GetObject(ctx, scope, ref)
	if err != nil {
		return fmt.Errorf("read %s: %w", ref, err)
	}
	if o == nil {
		return fmt.Errorf("%s: %w", ref, providers.ErrNotFound)
	}
	spec, _ := o["spec"].(map[string]any)
	if spec == nil {
		return fmt.Errorf("%s: no spec.replicas to scale", ref)
	}
	spec["replicas"] = n
	if err := w.ApplyObject(ctx, scope, ref.Cluster, o); err != nil {
		return fmt.Errorf("scale %s to %d: %w", ref, n, err)
	}
	return nil
}

// scaledSince tells, before recover undoes a scale, whether the replicas
// are still what the fault set; otherwise someone scaled the object since,
// and setting the backup's count back would overwrite that.
func scaledSince(ctx context.Context, p providers.Provider, u UndoAction) error {
	r, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return err
	}
	o, _, scaled, err := backupReplicas(u.Params["file"])
	if err != nil || !scaled {
		return err
	}
	ref := objectRef(u.Params["cluster"], o)
	now, err := r.GetObject(ctx, u.Target, ref)
	if err != nil {
		return fmt.Errorf("read %s: %w", ref, err)
	}
	if now == nil {
		return fmt.Errorf("%s is gone since the fault scaled it", ref)
	}
	n, err := replicasOf(now)
	if err != nil || strconv.FormatInt(n, 10) != u.Params["replicas"] {
		return fmt.Errorf("%s was scaled since the fault set its replicas to %s: setting them back would overwrite the change", ref, u.Params["replicas"])
	}
	return nil
}
