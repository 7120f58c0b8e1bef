package framework

import "testing"

// Every capability a scenario may require can be checked on a provider.
func TestEveryCapabilityIsChecked(t *testing.T) {
	t.Parallel()
	for _, c := range capabilities {
		if _, ok := capabilityCheck[c]; !ok {
			t.Errorf("capability %s has no check in capabilityCheck", c)
		}
	}
	if len(capabilityCheck) != len(capabilities) {
		t.Errorf("%d checks for %d capabilities", len(capabilityCheck), len(capabilities))
	}
}
