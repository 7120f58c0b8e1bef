package providers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Baseline is nil when the cluster behind p is healthy: every Machine
// Running with a Ready Node, and every control plane with all its
// replicas healthy, none deleting, and as many healthy etcd members as
// control planes; on kind, every node's Node Ready. Otherwise it says what
// is not. A vCenter alone has no baseline to prove.
func Baseline(ctx context.Context, p Provider) error {
	c, ok := p.(ClusterAPI)
	if !ok {
		if n, ok := p.(Nodes); ok {
			return nodesBaseline(ctx, p, n)
		}
		return nil
	}
	machines, err := p.Resolve(ctx, Selector{})
	if err != nil {
		return err
	}
	if len(machines) == 0 {
		return errors.New("no Machine")
	}
	var bad []string
	owners := map[string]bool{}
	for _, m := range machines {
		st, err := c.Machine(ctx, m)
		if err != nil {
			return err
		}
		if st.Gone || st.Deleting || st.Phase != "Running" || st.NodeReady != "True" {
			bad = append(bad, fmt.Sprintf("%s: phase %s, Node %s Ready=%s", m, st.Phase, st.Node, st.NodeReady))
			continue
		}
		o, err := c.Owner(ctx, m)
		if err != nil {
			return err
		}
		key := o.Kind + "/" + o.Name
		if owners[key] {
			continue
		}
		owners[key] = true
		if o.Healthy < o.Desired || o.Deleting > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d of %d healthy, %d deleting", key, o.Healthy, o.Desired, o.Deleting))
		}
		if o.Kind == "KubeadmControlPlane" && o.EtcdHealthy != o.Desired {
			bad = append(bad, fmt.Sprintf("%s: %d healthy etcd members for %d control planes", key, o.EtcdHealthy, o.Desired))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// nodesBaseline is Baseline where there are no Machines (kind): the API
// server answers and every node's Node is Ready.
func nodesBaseline(ctx context.Context, p Provider, n Nodes) error {
	nodes, err := p.Resolve(ctx, Selector{})
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		return errors.New("no node")
	}
	if err := n.APIServer(ctx, nodes[0]); err != nil {
		return fmt.Errorf("API server: %w", err)
	}
	var bad []string
	for _, obj := range nodes {
		st, err := n.NodeOf(ctx, obj)
		if err != nil {
			return err
		}
		if st.Gone || st.NodeReady != "True" {
			bad = append(bad, fmt.Sprintf("%s: Node %s Ready=%s", obj, st.Node, st.NodeReady))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// WaitBaseline waits, reading every interval for up to timeout, until
// Baseline is nil; its error says what was last not healthy.
func WaitBaseline(ctx context.Context, p Provider, interval, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		last = Baseline(ctx, p)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("not healthy within %s: %w", timeout, errors.Join(last, err))
	}
	return nil
}
