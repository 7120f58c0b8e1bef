package main

import (
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/scenarios/selection"
)

// selectScenarios is selection.Select, its errors usage errors (exit 2).
func selectScenarios(args []string, selector string, sets map[string]string) ([]*scenario.Scenario, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, usageErr("--selector %q: %v", selector, err)
	}
	scs, err := selection.Select(args, selector, sets)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return scs, nil
}

// multiple tells whether args (and a selector) may name more than one
// scenario: then run prints a summary and writes one JUnit for all.
func multiple(args []string, selector string) bool {
	if len(args) != 1 || selector != "" {
		return true
	}
	st, err := os.Stat(args[0])
	return err == nil && st.IsDir()
}

// parseSets reads --set values, name=value each.
func parseSets(sets []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErr("--set %q: expected name=value", s)
		}
		out[k] = v
	}
	return out, nil
}
