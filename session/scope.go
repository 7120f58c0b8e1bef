package session

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// RequireScope checks a run's cluster against the management cluster's:
// scope (namespace/name, "" none) must name one of them, and a
// destructive run against a management cluster with several must name
// one. A session with no management cluster client passes.
func (s *Session) RequireScope(ctx context.Context, scope, scenarioName string, destructive bool) error {
	if s.Client == nil {
		return nil
	}
	var list clusterv1.ClusterList
	if err := s.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("list the management cluster's Clusters: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		names = append(names, c.Namespace+"/"+c.Name)
	}
	sort.Strings(names)
	switch {
	case scope != "" && !slices.Contains(names, scope):
		return configErr("--cluster %s: no such Cluster in context %s; its clusters: %s", scope, s.Context, strings.Join(names, ", "))
	case scope == "" && destructive && len(names) > 1:
		return configErr("scenario %s injects faults and context %s manages %d clusters (%s): name the one it may touch with --cluster NAMESPACE/NAME", scenarioName, s.Context, len(names), strings.Join(names, ", "))
	}
	return nil
}
