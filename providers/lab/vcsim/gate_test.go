package vcsim_test

import (
	"context"
	"testing"

	"github.com/faultline-dev/faultline/providers/lab/vcsim"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// TestIntegrationGate: a login through the gate works, is refused while
// the gate is cut (a connection open then is closed), and works again
// once it is open; the simulator itself stays reachable throughout.
func TestIntegrationGate(t *testing.T) {
	sim, err := vcsim.Start(vcsim.Input{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	ctx := t.Context()
	gated := sim.Config()
	login := func() error {
		p, err := vsphere.New(ctx, gated)
		if err == nil {
			_ = p.Close(context.Background())
		}
		return err
	}
	open, err := vsphere.New(ctx, gated)
	if err != nil {
		t.Fatalf("login through the gate: %v", err)
	}
	t.Cleanup(func() { _ = open.Close(context.Background()) })

	sim.Gate().SetReachable(false)
	if err := login(); err == nil {
		t.Error("a login through the cut gate succeeded")
	}
	if _, err := open.ListVMs(ctx); err == nil {
		t.Error("a session opened before the cut still reaches vCenter through it")
	}
	if _, err := vsphere.New(ctx, sim.DirectConfig()); err != nil {
		t.Errorf("the simulator itself, while the gate is cut: %v", err)
	}

	sim.Gate().SetReachable(true)
	if err := login(); err != nil {
		t.Errorf("a login once the gate is open again: %v", err)
	}
}
