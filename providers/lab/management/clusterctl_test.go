package management

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// TestClusterctlConfig: the configuration names the four providers with
// clusterctl's local-repository URLs at the newest version served, and
// every served version has its release's own metadata.yaml, whose
// release series holds it (what clusterctl plans by). The releases'
// sources come through the Go module proxy.
func TestClusterctlConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("reads each release's module source through the module proxy")
	}
	dir := t.TempDir()
	path, err := WriteClusterctlConfig(context.Background(), dir, labconfig.Stacks)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg ClusterctlConfig
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.DisableVersionCheck != "true" || len(cfg.Providers) != len(inventoryProviders) {
		t.Fatalf("configuration %+v: want the version check off and %d providers", cfg, len(inventoryProviders))
	}
	for i, p := range inventoryProviders {
		versions := map[string]bool{}
		for _, s := range labconfig.Stacks {
			versions[map[bool]string{false: s.ClusterAPI, true: s.CAPV}[p.capv]] = true
		}
		newest := ""
		for v := range versions {
			if newest == "" || version.MustParseSemantic(newest).LessThan(version.MustParseSemantic(v)) {
				newest = v
			}
			meta, err := os.ReadFile(filepath.Join(dir, "repository", p.name, v, "metadata.yaml"))
			if err != nil {
				t.Fatalf("%s %s: %v", p.name, v, err)
			}
			var m clusterctlv1.Metadata
			if err := yaml.Unmarshal(meta, &m); err != nil {
				t.Fatalf("%s %s: metadata: %v", p.name, v, err)
			}
			if m.GetReleaseSeriesForVersion(version.MustParseSemantic(v)) == nil {
				t.Errorf("%s %s: its metadata has no release series for it: %+v", p.name, v, m.ReleaseSeries)
			}
		}
		got := cfg.Providers[i]
		want := "file://" + filepath.Join(dir, "repository", p.name, newest) + "/"
		if got.Name != trimType(p) || got.Type != string(p.kind) || !strings.HasPrefix(got.URL, want) || !strings.HasSuffix(got.URL, "-components.yaml") {
			t.Errorf("provider %+v: want %s %s at %s*-components.yaml", got, trimType(p), p.kind, want)
		}
	}
}
