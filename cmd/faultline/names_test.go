package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnknownScenarioSuggests: a misspelt catalogue name gets the nearest
// one, not the whole catalogue; a name near none gets the list.
func TestUnknownScenarioSuggests(t *testing.T) {
	for _, args := range [][]string{{"describe", "power-of-worker"}, {"run", "power-of-worker", "--dry-run"}} {
		var out, errOut bytes.Buffer
		code := execute(args, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), `did you mean "power-off-worker"?`) || strings.Contains(errOut.String(), "vm-power-cycle") {
			t.Errorf("%v: exit %d: %s", args, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := execute([]string{"describe", "zzzzzzzz"}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "it has: ") {
		t.Errorf("describe zzzzzzzz: exit %d: %s", code, errOut.String())
	}
}
