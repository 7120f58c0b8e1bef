package nodesim

import (
	"context"
	"errors"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/providers"
)

// A tick's copy of the faults does not change under it, a static pod's
// change is counted once per call, and a leader move is taken once.
func TestNodeFaults(t *testing.T) {
	t.Parallel()
	f := newNodeFaults()
	f.setStaticPod("cp-0", "etcd", false)
	before := f.now()
	f.setStaticPod("cp-0", "etcd", true)
	f.setKubelet("md-0", false)
	if _, stopped := before.kubeletStopped["md-0"]; !before.podsStopped["cp-0"]["etcd"] || stopped {
		t.Fatalf("the copy changed with the faults: %+v", before)
	}
	after := f.now()
	if _, stopped := after.kubeletStopped["md-0"]; after.podsStopped["cp-0"]["etcd"] || after.podsGen["cp-0"] != 2 || !stopped {
		t.Fatalf("faults now: %+v", after)
	}

	cp := &nodeView{cluster: "lab", controlPlane: true}
	if err := f.setLeaderStuck("md-0", &nodeView{cluster: "lab"}, true); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("a worker's leader: %v, want ErrNotFound", err)
	}
	if err := f.setLeaderStuck("cp-0", cp, true); err != nil || f.now().stuckLeader["lab"] != "cp-0" {
		t.Fatalf("stick: %v, %v", err, f.now().stuckLeader)
	}
	if err := f.setLeaderStuck("cp-0", cp, false); err != nil || f.now().stuckLeader["lab"] != "" {
		t.Fatalf("free: %v, %v", err, f.now().stuckLeader)
	}
	if from := f.takeMoveLeader("lab"); from != "cp-0" {
		t.Fatalf("move leader from %q, want cp-0", from)
	}
	if from := f.takeMoveLeader("lab"); from != "" {
		t.Fatalf("a move taken twice: %q", from)
	}
	if err := f.setLeaderStuck("cp-0", nil, true); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("a gone VM stuck: %v", err)
	}
}

// Probes and faults from other goroutines never wait on a tick: they take
// only the small locks (run with -race).
func TestNodeSimStateIsSafeAcrossGoroutines(t *testing.T) {
	t.Parallel()
	s := newSim(config{})
	now := time.Now()
	s.views.Set("cp-0", nodeView{cluster: "lab", controlPlane: true, on: true, upAt: now.Add(-time.Second)})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				s.faults.setStaticPod("cp-0", "etcd", (i+j)%2 == 0)
				s.staticPodRunning("cp-0", "etcd", now)
				_ = s.setLeaderStuck("cp-0", j%2 == 0)
				s.cni.start("cp-0", now)
				s.cni.up("cp-0")
				_ = s.faults.now()
			}
		}()
	}
	wg.Wait()
	s.faults.setStaticPod("cp-0", "etcd", true)
	if !s.staticPodRunning("cp-0", "etcd", now) {
		t.Fatal("etcd started again but does not run")
	}
	s.faults.setStaticPod("cp-0", "etcd", false)
	if s.staticPodRunning("cp-0", "etcd", now) {
		t.Fatal("etcd stopped but runs")
	}
}

// A cluster that Renew removed after the tick read the clusters has no
// leader to elect: the tick goes on (it dereferenced the missing cluster's
// workload server and crashed the process).
func TestElectLeaderOfRemovedCluster(t *testing.T) {
	s := &Sim{config: config{clusters: labconfig.NewMap[labCluster]()}}
	if err := s.electLeader(context.Background(), "lab-2/lab", faultsNow{}); err != nil {
		t.Fatalf("electLeader of a removed cluster: %v", err)
	}
}
