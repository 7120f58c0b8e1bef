package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/scenarios"
)

// scenarioSource is one scenario to load: a file, or a catalogue name.
type scenarioSource struct {
	path    string // a file; "" for a catalogue scenario
	name    string // a catalogue name
	display string
}

// scenarioSources expands args (files, folders searched for *.yaml and
// *.yml, catalogue names) into sources, in argument order, folders'
// files sorted; no args is the whole catalogue.
func scenarioSources(args []string) ([]scenarioSource, error) {
	if len(args) == 0 {
		var out []scenarioSource
		for _, name := range scenarios.Names() {
			out = append(out, scenarioSource{name: name, display: name})
		}
		return out, nil
	}
	var out []scenarioSource
	for _, arg := range args {
		st, err := os.Stat(arg)
		switch {
		case err == nil && st.IsDir():
			var files []string
			err := filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
					files = append(files, p)
				}
				return nil
			})
			if err != nil {
				return nil, usageErr("scenario folder %s: %v", arg, err)
			}
			if len(files) == 0 {
				return nil, usageErr("scenario folder %s: no .yaml or .yml file in it", arg)
			}
			sort.Strings(files)
			for _, f := range files {
				out = append(out, scenarioSource{path: f, display: f})
			}
		case err == nil:
			out = append(out, scenarioSource{path: arg, display: arg})
		case !strings.ContainsAny(arg, "/."):
			if _, rerr := scenarios.Read(arg); rerr != nil {
				return nil, usageErr("%v", rerr)
			}
			out = append(out, scenarioSource{name: arg, display: arg})
		default:
			return nil, usageErr("scenario %s: %v", arg, err)
		}
	}
	return out, nil
}

// load parses the source with the overrides it declares.
func (s scenarioSource) load(sets map[string]string) (*scenario.Scenario, error) {
	if s.path != "" {
		return scenario.Load(s.path, sets, engine.Vocabulary)
	}
	data, err := scenarios.Read(s.name)
	if err != nil {
		return nil, err
	}
	return scenario.Parse("scenarios/"+s.name+".yaml", data, sets, engine.Vocabulary)
}

// selectScenarios loads the scenarios args name whose metadata.labels
// match selector (label selector syntax; "" matches all). Each --set goes
// to the scenarios that declare its parameter; one that none of the
// selected scenarios declares is an error, as with a single scenario.
func selectScenarios(args []string, selector string, sets map[string]string) ([]*scenario.Scenario, error) {
	sel := labels.Everything()
	if selector != "" {
		var err error
		if sel, err = labels.Parse(selector); err != nil {
			return nil, usageErr("--selector %q: %v", selector, err)
		}
	}
	sources, err := scenarioSources(args)
	if err != nil {
		return nil, err
	}
	var out []*scenario.Scenario
	used := map[string]bool{}
	for _, src := range sources {
		sc, err := src.load(nil)
		if err != nil {
			return nil, &exitError{code: engine.ExitUsage, err: err}
		}
		if !sel.Matches(labels.Set(sc.Metadata.Labels)) {
			continue
		}
		if len(sets) > 0 {
			mine := map[string]string{}
			for k, v := range sets {
				if _, ok := sc.Spec.Parameters[k]; ok {
					mine[k], used[k] = v, true
				}
			}
			if len(sources) == 1 {
				mine = sets // a single scenario reports an unknown --set itself
			}
			if sc, err = src.load(mine); err != nil {
				return nil, &exitError{code: engine.ExitUsage, err: err}
			}
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil, usageErr("no scenario of %s matches the selector %q", describeArgs(args), selector)
	}
	if len(sources) > 1 {
		for k := range sets {
			if !used[k] {
				return nil, usageErr("--set %s: none of the selected scenarios declares that parameter", k)
			}
		}
	}
	return out, nil
}

func describeArgs(args []string) string {
	if len(args) == 0 {
		return "the catalogue"
	}
	return strings.Join(args, ", ")
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

// summaryLine is one scenario's line in a run's summary.
func summaryLine(res *engine.Result) string {
	line := fmt.Sprintf("  %-8s %s (%s)", strings.ToUpper(string(res.Verdict)), res.Scenario, res.FinishedAt.Sub(res.StartedAt).Round(100*time.Millisecond))
	if res.Reason != "" {
		line += ": " + res.Reason
	}
	return line
}
