package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers"
)

// backupFile is where an object's backup goes in a backup folder.
func backupFile(dir string, ref providers.ObjectRef) string {
	name := strings.ToLower(ref.Kind)
	if ref.Namespace != "" {
		name += "-" + ref.Namespace
	}
	return filepath.Join(dir, name+"-"+ref.Name+".yaml")
}

// cleanObject drops what the API server sets, leaving what a user wrote:
// the form backups are kept in and compared in.
func cleanObject(o map[string]any) map[string]any {
	out := make(map[string]any, len(o))
	for k, v := range o {
		out[k] = v
	}
	if meta, ok := o["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(meta))
		for k, v := range meta {
			switch k {
			case "uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds":
			case "annotations":
				if a := userAnnotations(v); len(a) > 0 {
					m[k] = a
				}
			default:
				m[k] = v
			}
		}
		out["metadata"] = m
	}
	delete(out, "status")
	return out
}

// serverAnnotations are annotations an API server writes on every write,
// not part of what a user wrote.
var serverAnnotations = map[string]bool{
	// Cluster API's in-memory API server (the lab's workload clusters).
	"inmemory.infrastructure.cluster.x-k8s.io/last-sync": true,
}

func userAnnotations(v any) map[string]any {
	in, _ := v.(map[string]any)
	out := map[string]any{}
	for k, val := range in {
		if !serverAnnotations[k] {
			out[k] = val
		}
	}
	return out
}

func marshalClean(o map[string]any) ([]byte, error) {
	return yaml.Marshal(cleanObject(o))
}

// writeBackup saves the object ref names, if it exists, to its backup
// file and tells whether it did.
func writeBackup(ctx context.Context, p providers.Provider, scope providers.Object, ref providers.ObjectRef, dir string) (bool, error) {
	r, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return false, err
	}
	o, err := r.GetObject(ctx, scope, ref)
	if err != nil || o == nil {
		return false, err
	}
	b, err := marshalClean(o)
	if err != nil {
		return false, fmt.Errorf("back up %s: %w", ref, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("back up %s: %w", ref, err)
	}
	file := backupFile(dir, ref)
	if err := writeFileSync(file, b); err != nil {
		return false, fmt.Errorf("back up %s: %w", ref, err)
	}
	return true, nil
}

func writeFileSync(path string, b []byte) error {
	f, err := regularfile.Create(path, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// restoreBackup recreates (or replaces) an object from its backup file and
// checks that it reads back byte for byte as the backup.
func restoreBackup(ctx context.Context, p providers.Provider, scope providers.Object, cluster, file string) error {
	w, err := providers.As[providers.ObjectWriter](p, providers.CapObjectWrites)
	if err != nil {
		return err
	}
	r, err := providers.As[providers.Objects](p, providers.CapObjects)
	if err != nil {
		return err
	}
	o, b, err := readBackup(file)
	if err != nil {
		return err
	}
	ref := objectRef(cluster, o)
	if err := w.ApplyObject(ctx, scope, cluster, o); err != nil {
		return fmt.Errorf("restore %s from %s: %w", ref, file, err)
	}
	got, err := r.GetObject(ctx, scope, ref)
	if err != nil {
		return fmt.Errorf("read %s back after restoring it: %w", ref, err)
	}
	if got == nil {
		return fmt.Errorf("%s is absent after restoring it from %s", ref, file)
	}
	now, err := marshalClean(got)
	if err != nil {
		return err
	}
	if !bytes.Equal(now, b) {
		return fmt.Errorf("%s restored from %s differs from its backup:\n%s", ref, file, firstDifference(b, now))
	}
	return nil
}

// firstDifference shows the first line where two texts differ.
func firstDifference(want, got []byte) string {
	a, b := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var la, lb string
		if i < len(a) {
			la = a[i]
		}
		if i < len(b) {
			lb = b[i]
		}
		if la != lb {
			return fmt.Sprintf("line %d: backup %q, restored %q", i+1, la, lb)
		}
	}
	return "no line differs"
}

// readBackup reads the object a backup file holds, and the file's bytes.
func readBackup(file string) (map[string]any, []byte, error) {
	b, err := regularfile.Read(file, regularfile.Kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("read backup: %w", err)
	}
	var o map[string]any
	j, err := yaml.YAMLToJSON(b)
	if err == nil {
		err = utiljson.Unmarshal(j, &o)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("backup %s: %w", file, err)
	}
	return o, b, nil
}
