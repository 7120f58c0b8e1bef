package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/faultline-dev/faultline/scenarios"
)

// A suite's scenarios: the catalogue unless left out, then the config's
// paths (relative to the config file) and $E2E_SCENARIOS.
func TestSources(t *testing.T) {
	t.Setenv(EnvScenarios, "")
	t.Setenv(EnvCatalogue, "")
	dir := t.TempDir()
	for _, f := range []string{"team/a.yaml", "team/b.yml", "extra/c.yaml"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	strs := func(cfg *Config) []string {
		t.Helper()
		srcs, err := Sources(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range srcs {
			out = append(out, s.String())
		}
		return out
	}
	if got := strs(&Config{}); !slices.Equal(got, scenarios.Names()) {
		t.Errorf("default: %v, want the catalogue", got)
	}
	no := false
	cfg := &Config{dir: dir, Scenarios: ScenariosConfig{Paths: []string{"team"}, Catalogue: &no}}
	want := []string{filepath.Join(dir, "team/a.yaml"), filepath.Join(dir, "team/b.yml")}
	if got := strs(cfg); !slices.Equal(got, want) {
		t.Errorf("config paths: %v, want %v", got, want)
	}
	t.Setenv(EnvScenarios, filepath.Join(dir, "extra"))
	if got := strs(cfg); !slices.Equal(got, append(want, filepath.Join(dir, "extra/c.yaml"))) {
		t.Errorf("with $%s: %v", EnvScenarios, got)
	}
	t.Setenv(EnvCatalogue, "true")
	if got := strs(cfg); len(got) != len(scenarios.Names())+3 {
		t.Errorf("$%s=true: %d sources", EnvCatalogue, len(got))
	}
	t.Setenv(EnvScenarios, filepath.Join(dir, "missing"))
	if _, err := Sources(cfg); err == nil {
		t.Error("a missing folder is not an error")
	}
}
