package e2e

import (
	"flag"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline-dev/faultline/scenarios"
	"github.com/faultline-dev/faultline/scenarios/selection"
)

// The suites' own flags, after go test's -args: --scenarios adds scenario
// files and folders (comma-separated), --catalogue=false leaves the
// catalogue out. Ginkgo builds the spec tree when the test binary starts,
// before flags are parsed, so DescribeScenarios reads them from os.Args
// itself; they are registered so the flag package accepts them.
var (
	_ = flag.String("scenarios", "", "scenario files and folders to run beside the catalogue's, comma-separated (also $"+EnvScenarios+" and the e2e config's scenarios.paths)")
	_ = flag.String("catalogue", "", "false leaves faultline's catalogue out (also $"+EnvCatalogue+" and the e2e config's scenarios.catalogue)")
)

// Sources are the scenarios a suite describes: the catalogue's, unless
// the config's scenarios.catalogue, $E2E_CATALOGUE or --catalogue says
// false, then the files and folders of the config's scenarios.paths
// (relative to the config file), $E2E_SCENARIOS and --scenarios, each
// folder's files in name order.
func Sources(cfg *Config) ([]selection.Source, error) {
	catalogue := cfg.Scenarios.Catalogue == nil || *cfg.Scenarios.Catalogue
	for _, v := range []string{os.Getenv(EnvCatalogue), argValue("catalogue")} {
		if v != "" {
			catalogue = v != "false"
		}
	}
	var paths []string
	for _, p := range cfg.Scenarios.Paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cfg.dir, p)
		}
		paths = append(paths, p)
	}
	for _, v := range []string{os.Getenv(EnvScenarios), argValue("scenarios")} {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				paths = append(paths, p)
			}
		}
	}
	var out []selection.Source
	if catalogue {
		for _, name := range scenarios.Names() {
			out = append(out, selection.Catalogue(name))
		}
	}
	if len(paths) == 0 {
		return out, nil
	}
	user, err := selection.Sources(paths)
	if err != nil {
		return nil, err
	}
	return append(out, user...), nil
}

// argValue is the value of the test binary's flag name in os.Args
// (-name=v, --name=v, -name v, --name v), "" when absent.
func argValue(name string) string {
	args := os.Args[1:]
	for i, a := range args {
		for _, p := range []string{"-" + name, "--" + name} {
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}
