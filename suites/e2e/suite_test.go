package e2e

import (
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

func TestGinkgoKeeps(t *testing.T) {
	text := func(name string) string { return "faultline nightly nightly " + name + " " + SpecText }
	cases := []struct {
		name   string
		cfg    types.SuiteConfig
		labels []string
		spec   string
		want   bool
	}{
		{"no filter", types.SuiteConfig{}, nil, "power-off-worker", true},
		{"label kept", types.SuiteConfig{LabelFilter: "tier:core && !own-cluster"}, []string{"tier:core"}, "power-off-worker", true},
		{"label left out", types.SuiteConfig{LabelFilter: "tier:core && !own-cluster"}, []string{"own-cluster", "tier:core"}, "kill-etcd-quorum", false},
		{"focus kept", types.SuiteConfig{FocusStrings: []string{"power-off-worker", "stop-kubelet-cp"}}, nil, "stop-kubelet-cp", true},
		{"focus left out", types.SuiteConfig{FocusStrings: []string{"power-off-worker", "stop-kubelet-cp"}}, nil, "stop-kubelet-worker", false},
		{"skipped", types.SuiteConfig{SkipStrings: []string{"calico"}}, nil, "mismatched-calico-pool", false},
		{"focus and skip", types.SuiteConfig{FocusStrings: []string{"kubelet"}, SkipStrings: []string{"-cp"}}, nil, "stop-kubelet-worker", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keeps, err := ginkgoKeeps(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := keeps(c.labels, text(c.spec)); got != c.want {
				t.Errorf("%s with labels %v: kept %t, want %t", c.spec, c.labels, got, c.want)
			}
		})
	}
	if _, err := ginkgoKeeps(types.SuiteConfig{LabelFilter: "tier:core &&"}); err == nil {
		t.Error("a broken label filter: no error")
	}
}
