package selection

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/scenarios"
)

// Source is one scenario to load: a file, or a catalogue name.
type Source struct {
	path string // a file; "" for a catalogue scenario
	name string // a catalogue name
}

// String is the file, or the catalogue name.
func (s Source) String() string {
	if s.path != "" {
		return s.path
	}
	return s.name
}

// Sources expands args (files, folders searched for *.yaml and
// *.yml, catalogue names) into sources, in argument order, folders'
// files sorted; no args is the whole catalogue.
func Sources(args []string) ([]Source, error) {
	if len(args) == 0 {
		var out []Source
		for _, name := range scenarios.Names() {
			out = append(out, Source{name: name})
		}
		return out, nil
	}
	var out []Source
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
				return nil, fmt.Errorf("scenario folder %s: %w", arg, err)
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("scenario folder %s: no .yaml or .yml file in it", arg)
			}
			sort.Strings(files)
			for _, f := range files {
				out = append(out, Source{path: f})
			}
		case err == nil:
			out = append(out, Source{path: arg})
		case !strings.ContainsAny(arg, "/."):
			if _, rerr := ReadCatalogue(arg); rerr != nil {
				return nil, rerr
			}
			out = append(out, Source{name: arg})
		default:
			return nil, fmt.Errorf("scenario %s: %w", arg, err)
		}
	}
	return out, nil
}

// Load parses the scenario with the overrides.
func (s Source) Load(sets map[string]string) (*scenario.Scenario, error) {
	if s.path != "" {
		return scenario.Load(s.path, sets, engine.Vocabulary)
	}
	data, err := ReadCatalogue(s.name)
	if err != nil {
		return nil, err
	}
	return scenario.Parse("scenarios/"+s.name+".yaml", data, sets, engine.Vocabulary)
}

// ReadCatalogue reads the catalogue's scenario name; an unknown name is
// an error that offers the nearest one, or lists them all when none is
// near.
func ReadCatalogue(name string) ([]byte, error) {
	data, err := scenarios.Read(name)
	if err != nil {
		if best := scenario.Closest(name, scenarios.Names()); best != "" {
			return nil, fmt.Errorf("no scenario %q in the catalogue; did you mean %q? (faultline list shows them all)", name, best)
		}
	}
	return data, err
}

// Select loads the scenarios args name (Sources) whose metadata.labels
// match selector (label selector syntax; "" matches all). Each override
// goes to the scenarios that declare its parameter; one that none of the
// selected scenarios declares is an error, as with a single scenario
// (which reports it itself). Every error names the argument, file, field
// or selector at fault.
func Select(args []string, selector string, sets map[string]string) ([]*scenario.Scenario, error) {
	sel := labels.Everything()
	if selector != "" {
		var err error
		if sel, err = labels.Parse(selector); err != nil {
			return nil, fmt.Errorf("selector %q: %w", selector, err)
		}
	}
	sources, err := Sources(args)
	if err != nil {
		return nil, err
	}
	var out []*scenario.Scenario
	used := map[string]bool{}
	for _, src := range sources {
		sc, err := src.Load(nil)
		if err != nil {
			return nil, err
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
			if sc, err = src.Load(mine); err != nil {
				return nil, err
			}
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario of %s matches the selector %q", describeArgs(args), selector)
	}
	if len(sources) > 1 {
		for k := range sets {
			if !used[k] {
				return nil, fmt.Errorf("--set %s: none of the selected scenarios declares that parameter", k)
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

// File is the scenario file at path.
func File(path string) Source { return Source{path: path} }

// Catalogue is the catalogue scenario name.
func Catalogue(name string) Source { return Source{name: name} }
