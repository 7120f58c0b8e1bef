package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// etcdFake is a fake with three VMs that each host a member of one etcd
// cluster, as control-plane Machines do.
func etcdFake() *fake.Provider {
	p := fake.New("cp-1", "cp-2", "cp-3")
	for _, vm := range []string{"cp-1", "cp-2", "cp-3"} {
		p.SetAttributes(vm, map[providers.Attribute]string{providers.AttrEtcdCluster: "default/cp", providers.AttrEtcdMembers: "3"})
	}
	return p
}

func etcdScenario(t *testing.T, safety, targets, steps string) *scenario.Scenario {
	t.Helper()
	return parseScenario(t, "[VMPower]", safety, targets, steps)
}

func TestRunRefusesQuorumLoss(t *testing.T) {
	t.Parallel()
	two := `
    - name: two
      select: {vm: "cp-*"}
      count: 2`
	steps := `
    - name: off
      inject: {fault: vm.power-off, target: two}
    - name: see-off
      observe:
        phases:
          - {name: off, when: {probe: vm-powered-off, target: two}, within: 5s}`

	p := etcdFake()
	res, journal := run(t, context.Background(), etcdScenario(t, "", two, steps), p)
	want := "refused: step off would have 2 of the 3 etcd members of default/cp down at once (cp-1, cp-2); 3 members keep quorum only while at most 1 is down"
	if res.Verdict != engine.Error || !strings.Contains(res.Reason, want) {
		t.Errorf("verdict %s (%s), want error saying %q", res.Verdict, res.Reason, want)
	}
	if calls := p.Calls(); len(calls) != 0 {
		t.Errorf("a refused run called the provider: %v", calls)
	}
	if entries, _ := engine.ReadJournal(journal); len(entries) != 0 {
		t.Errorf("a refused run journaled faults: %v", entries)
	}

	// Declared: the same scenario runs.
	res, _ = run(t, context.Background(), etcdScenario(t, "  safety: {acceptQuorumLoss: true}", two, steps), etcdFake())
	if res.Verdict != engine.Pass {
		t.Errorf("with acceptQuorumLoss: verdict %s (%s)", res.Verdict, res.Reason)
	}
}

// One member at a time, each undone before the next, never loses quorum;
// exclude makes the two targets distinct.
func TestRunOneMemberAtATime(t *testing.T) {
	t.Parallel()
	targets := `
    - name: first
      select: {vm: "cp-*"}
      count: 1
    - name: second
      select: {vm: "cp-*"}
      count: 1
      exclude: [first]`
	steps := `
    - name: off-first
      inject: {fault: vm.power-off, target: first}
    - name: on-first
      undo: {fault: off-first}
    - name: off-second
      inject: {fault: vm.power-off, target: second}
    - name: see-off
      observe:
        phases:
          - {name: off, when: {probe: vm-powered-off, target: second}, within: 5s}`
	res, _ := run(t, context.Background(), etcdScenario(t, "", targets, steps), etcdFake())
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict %s (%s)", res.Verdict, res.Reason)
	}
	if len(res.Targets) != 2 || res.Targets[0].Objects[0] != "VirtualMachine/cp-1" || res.Targets[1].Objects[0] != "VirtualMachine/cp-2" {
		t.Errorf("targets %+v, want cp-1 then cp-2", res.Targets)
	}

	// Without the undo in between, the second injection would take two.
	steps = strings.Replace(steps, `
    - name: on-first
      undo: {fault: off-first}`, "", 1)
	res, _ = run(t, context.Background(), etcdScenario(t, "", targets, steps), etcdFake())
	if res.Verdict != engine.Error || !strings.Contains(res.Reason, "step off-second would have 2 of the 3") {
		t.Errorf("verdict %s (%s), want a refusal at off-second", res.Verdict, res.Reason)
	}
}
