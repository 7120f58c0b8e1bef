package nodesim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
)

// labCluster is one simulated cluster: its shape and its API server.
type labCluster struct {
	spec     labconfig.ClusterSpec
	workload *workloadapi.Server
}

// labClusters are the simulated clusters by key (namespace/name), read by
// the tick and the workload API servers' admission while AddCluster and
// RemoveCluster change them.
type labClusters = labconfig.Map[labCluster]

// AddCluster adds a cluster whose nodes the simulator plays: its in-memory
// store and its API server, whose endpoint Endpoint gives.
func (s *Sim) AddCluster(cs labconfig.ClusterSpec) error {
	key := cs.Key()
	s.mem.AddResourceGroup(resourceGroup(key))
	// Admission runs once the simulator creates pods, or a client dry-runs
	// a create.
	admit := func(ctx context.Context) (*workloadapi.Admitter, error) { return s.admitterFor(ctx, key) }
	w, err := workloadapi.New(s.mem, resourceGroup(key), s.log.WithName("workload"), admit)
	if err != nil {
		s.mem.DeleteResourceGroup(resourceGroup(key))
		return err
	}
	s.clusters.Set(key, labCluster{spec: cs, workload: w})
	return nil
}

// Endpoint is the API server endpoint of the simulated cluster of key.
func (s *Sim) Endpoint(key string) (*net.TCPAddr, error) {
	w := s.workload(key)
	if w == nil {
		return nil, fmt.Errorf("cluster %s: %w", key, errClusterRemoved)
	}
	return w.Addr(), nil
}

// RemoveCluster closes the API server of the simulated cluster of key and
// drops its store; the tick forgets its VMs. A cluster the simulator does
// not play is nothing to remove.
func (s *Sim) RemoveCluster(key string) error {
	lc, ok := s.clusters.Get(key)
	if !ok {
		return nil
	}
	s.clusters.Remove(key)
	err := lc.workload.Close()
	s.mem.DeleteResourceGroup(resourceGroup(key))
	return err
}

// Close closes every simulated cluster's API server.
func (s *Sim) Close() error {
	var errs []error
	for key, lc := range s.clusters.All() {
		if err := lc.workload.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stop workload cluster %s endpoint: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// SetKubelet stops or starts the kubelet of node.
func (s *Sim) SetKubelet(node string, running bool) { s.faults.setKubelet(node, running) }

// SetStaticPod stops or starts a control plane's static pod (etcd,
// kube-apiserver, ...) on node.
func (s *Sim) SetStaticPod(node, component string, running bool) {
	s.faults.setStaticPod(node, component, running)
}

// StaticPodRunning tells whether node's static pod component runs now.
func (s *Sim) StaticPodRunning(node, component string, now time.Time) bool {
	return s.staticPodRunning(node, component, now)
}

// SetCNI breaks (ok false) or mends the CNI agent of node.
func (s *Sim) SetCNI(node string, ok bool) { s.faults.setCNI(node, ok) }

// SetLeaderStuck holds node's etcd member as leader, or lets it go.
func (s *Sim) SetLeaderStuck(node string, stuck bool) error { return s.setLeaderStuck(node, stuck) }
