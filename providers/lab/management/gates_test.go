package management

import (
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"strings"
	"testing"

	"sigs.k8s.io/cluster-api/feature"
)

// The compressed profile turns Cluster API's reconcile rate limiting off
// for the process; a lab of the real profile (upstream's gates) in the
// same process is refused, and another compressed lab is not.
func TestGatesOnePerProcess(t *testing.T) {
	compressed, err := labconfig.ProfileNamed("compressed")
	if err != nil {
		t.Fatal(err)
	}
	realProfile, err := labconfig.ProfileNamed("real")
	if err != nil {
		t.Fatal(err)
	}
	if err := setGates(compressed); err != nil {
		t.Fatal(err)
	}
	if feature.Gates.Enabled(feature.ReconcilerRateLimiting) {
		t.Error("ReconcilerRateLimiting still on under the compressed profile")
	}
	if err := setGates(realProfile); err == nil || !strings.Contains(err.Error(), "needs a process of its own") {
		t.Errorf("a real-profile lab beside a compressed one: %v, want refused", err)
	}
	if err := setGates(compressed); err != nil {
		t.Errorf("a second compressed lab: %v", err)
	}
	if got := compressed.Knobs()["gate.ReconcilerRateLimiting"]; got != "false" {
		t.Errorf("the compressed profile's settings say gate.ReconcilerRateLimiting=%q", got)
	}
	if _, ok := realProfile.Knobs()["gate.ReconcilerRateLimiting"]; ok {
		t.Error("the real profile records a gate it leaves at upstream's default")
	}
}
