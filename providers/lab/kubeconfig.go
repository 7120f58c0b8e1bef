package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteKubeconfigs writes the management cluster's kubeconfig and each
// workload cluster's into the lab folder and returns their paths, the
// management one first.
func (l *Lab) WriteKubeconfigs(ctx context.Context) ([]string, error) {
	mgmt := filepath.Join(l.dir, "management.kubeconfig")
	if err := l.mgmt.WriteKubeconfig(mgmt); err != nil {
		return nil, err
	}
	paths := []string{mgmt}
	for _, cs := range l.in.Clusters {
		s, err := secret.GetFromNamespacedName(ctx, l.Client(), client.ObjectKey{Namespace: cs.NamespaceOrDefault(), Name: cs.Name}, secret.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig of cluster %s: %w", cs.Name, err)
		}
		p := filepath.Join(l.dir, cs.Name+".kubeconfig")
		if err := os.WriteFile(p, s.Data[secret.KubeconfigDataName], 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
