package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
)

// TestTogetherLongestFirst: with --parallel, the leased scenarios and
// those on a lab of their own each start longest first as the history
// took them, those it has no time for after them in their order; with no
// history, in the order given.
func TestTogetherLongestFirst(t *testing.T) {
	names := []string{"power-off-worker", "vm-power-cycle", "delete-cp-vm", "stop-kubelet-worker", "kill-etcd-quorum", "etcd-leader-stuck"}
	plan := make([]*planned, len(names))
	for i, name := range names {
		sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", name+".yaml"), nil, engine.Vocabulary)
		if err != nil {
			t.Fatal(err)
		}
		plan[i] = &planned{sc: sc}
	}
	order := func(history *artifacts.History) (string, string) {
		o := &runOptions{parallel: 4, provider: session.ProviderLab, lab: labFlags{profile: "compressed"}, pool: &session.Pool{}}
		var stderr bytes.Buffer
		var got []string
		for _, i := range o.together(plan, history, &stderr) {
			got = append(got, names[i])
		}
		return strings.Join(got, " "), stderr.String()
	}
	if got, _ := order(nil); got != "power-off-worker vm-power-cycle kill-etcd-quorum delete-cp-vm stop-kubelet-worker etcd-leader-stuck" {
		t.Errorf("no history: %s", got)
	}
	h, err := artifacts.OpenHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	end := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for name, secs := range map[string]int{"etcd-leader-stuck": 155, "power-off-worker": 20, "delete-cp-vm": 35, "kill-etcd-quorum": 58, "vm-power-cycle": 70} {
		res := &engine.Result{Scenario: name, Provider: session.ProviderLab, Profile: "compressed", Verdict: engine.Pass, StartedAt: end.Add(-time.Duration(secs) * time.Second), FinishedAt: end}
		if name == "vm-power-cycle" {
			res.Profile = "" // no spec.lab: no lab, no profile
		}
		if err := h.Add(res); err != nil {
			t.Fatal(err)
		}
	}
	got, said := order(h)
	if got != "etcd-leader-stuck vm-power-cycle kill-etcd-quorum delete-cp-vm power-off-worker stop-kubelet-worker" {
		t.Errorf("longest first: %s", got)
	}
	if !strings.Contains(said, "longest first, as the history took them: etcd-leader-stuck 2m35s, delete-cp-vm 35s, power-off-worker 20s\n") {
		t.Errorf("stderr does not say the order of the leased ones:\n%s", said)
	}
	if !strings.Contains(said, "longest first, as the history took them: vm-power-cycle 1m10s, kill-etcd-quorum 58s\n") {
		t.Errorf("stderr does not say the order of those on a lab of their own:\n%s", said)
	}
}
