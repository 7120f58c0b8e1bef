package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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
