package session_test

import (
	"context"
	"fmt"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/vsphere"
	"os"
	"path/filepath"
	"time"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
)

// A team's own suite opens a provider, runs a scenario with its artifacts,
// and reads the result back. Here the provider is the embedded lab's
// vCenter simulator (a scenario without spec.lab needs nothing more);
// against a vCenter of your own, set Provider to session.ProviderVSphere
// and VCenter to its address, with the vCenter in VCenter.Allowed.
func Example() {
	ctx := context.Background()
	sc, err := scenario.Load("../scenarios/vm-power-cycle.yaml", nil, engine.Vocabulary)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := session.Open(ctx, session.Config{Provider: session.ProviderLab})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)
	tmp, err := os.MkdirTemp("", "faultline-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "run")
	if _, err := session.Execute(ctx, session.ExecuteInput{Dir: dir, Run: engine.RunInput{Scenario: sc, Provider: s.Provider, Leases: filepath.Join(tmp, "leases")}}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := artifacts.ReadResult(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Scenario, res.Verdict)
	for _, ph := range res.Phases {
		fmt.Println(ph.Name, ph.OK)
	}
	// Output:
	// vm-power-cycle pass
	// vm-off true
	// vm-on true
}

// A run changes a loaded scenario in one place: here its timeout and the
// Cluster its targets stay in, as --timeout and --cluster do.
func ExampleAdjust() {
	sc, err := scenario.Load("../scenarios/power-off-worker.yaml", nil, engine.Vocabulary)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := session.Adjust(sc, session.Adjustments{Timeout: 10 * time.Minute, Scope: "prod/payments"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sc.Spec.Timeout, sc.Spec.Targets[0].Select.Cluster)
	// Output: 10m0s prod/payments
}

// The command that undoes what a journal left pending names what the
// journal's provider record needs allowed again.
func ExampleRecoverCommand() {
	vc := vsphere.Record{URL: "https://vc.example.com/sdk"}
	fmt.Println(session.RecoverCommand("_artifacts/run/journal.jsonl", capi.Record{Context: "prod", VCenter: &vc}.Ref()))
	// Output: faultline recover _artifacts/run/journal.jsonl --allow-vcenter vc.example.com --allow-context prod
}
