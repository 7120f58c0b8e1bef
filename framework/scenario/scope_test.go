package scenario_test

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

func TestScopeTo(t *testing.T) {
	t.Parallel()
	sc := func(sels ...providers.Selector) *scenario.Scenario {
		s := &scenario.Scenario{Metadata: scenario.Metadata{Name: "s"}}
		for i, sel := range sels {
			s.Spec.Targets = append(s.Spec.Targets, scenario.Target{Name: string(rune('a' + i)), Select: sel})
		}
		return s
	}
	s := sc(providers.Selector{Role: "worker"}, providers.Selector{Cluster: "prod"}, providers.Selector{Cluster: "team/prod"})
	if err := s.ScopeTo("team/prod"); err != nil {
		t.Fatal(err)
	}
	for _, tg := range s.Spec.Targets {
		if tg.Select.Cluster != "team/prod" {
			t.Errorf("target %s: cluster %q, want team/prod", tg.Name, tg.Select.Cluster)
		}
	}
	for _, tt := range []struct {
		cluster string
		sel     providers.Selector
		want    string
	}{
		{"team/prod", providers.Selector{Cluster: "team/staging"}, "spec.targets[0].select.cluster: Invalid value: \"team/staging\": target a is in cluster team/staging, outside the cluster of the run, team/prod"},
		{"team/prod", providers.Selector{Cluster: "other/prod"}, "outside the cluster of the run"},
		{"team/prod", providers.Selector{VM: "worker-*"}, "spec.targets[0].select: Invalid value: \"a\": target a selects VMs by name or UUID"},
		{"prod", providers.Selector{}, `cluster "prod": expected namespace/name`},
	} {
		err := sc(tt.sel).ScopeTo(tt.cluster)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ScopeTo(%s) of %+v: %v, want %q", tt.cluster, tt.sel, err, tt.want)
		}
	}
}
