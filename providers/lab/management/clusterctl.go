package management

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// ClusterctlConfig is the clusterctl configuration WriteClusterctlConfig
// writes: clusterctl's providers read from a local repository (clusterctl's
// file:// URLs, {base}/{provider-label}/{version}/{components file}), and
// its check for a newer clusterctl off, so `clusterctl upgrade plan` works
// with no reach to GitHub.
type ClusterctlConfig struct {
	Providers []ClusterctlProvider `json:"providers"`
	// DisableVersionCheck is CLUSTERCTL_DISABLE_VERSIONCHECK, a variable
	// clusterctl reads from its configuration file too.
	DisableVersionCheck string `json:"CLUSTERCTL_DISABLE_VERSIONCHECK"`
}

// ClusterctlProvider is one entry of a clusterctl configuration's providers.
type ClusterctlProvider struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Type string `json:"type"`
}

// componentsFile is the components file clusterctl's repository of each
// provider type names in its URL. clusterctl reads only metadata.yaml to
// plan an upgrade; the components files are not written (faultline's
// upgrade.management applies an upgrade, not `clusterctl upgrade apply`).
var componentsFile = map[string]string{
	"CoreProvider": "core-components.yaml", "BootstrapProvider": "bootstrap-components.yaml",
	"ControlPlaneProvider": "control-plane-components.yaml", "InfrastructureProvider": "infrastructure-components.yaml",
}

// WriteClusterctlConfig writes into dir a clusterctl configuration
// (clusterctl.yaml) and the local repository it reads: every Cluster API
// and CAPV version of stacks, each with its release's own metadata.yaml,
// read from the release's module source through the Go module proxy (go
// mod download). With the lab's clusterctl inventory (writeInventory),
// `clusterctl upgrade plan --config DIR/clusterctl.yaml` then lists the
// running providers at their versions and the newer ones served. It
// returns the configuration's path.
func WriteClusterctlConfig(ctx context.Context, dir string, stacks []labconfig.Stack) (string, error) {
	var capi, capv []string
	for _, s := range stacks {
		capi, capv = appendNew(capi, s.ClusterAPI), appendNew(capv, s.CAPV)
	}
	repo := filepath.Join(dir, "repository")
	var cfg ClusterctlConfig
	cfg.DisableVersionCheck = "true"
	for _, p := range inventoryProviders {
		module, versions := "sigs.k8s.io/cluster-api", capi
		if p.capv {
			module, versions = "sigs.k8s.io/cluster-api-provider-vsphere", capv
		}
		for _, v := range versions {
			if err := copyMetadata(ctx, module, v, filepath.Join(repo, p.name, v)); err != nil {
				return "", fmt.Errorf("clusterctl repository: provider %s %s: %w", p.name, v, err)
			}
		}
		newest := versions[len(versions)-1]
		url := "file://" + filepath.Join(repo, p.name, newest, componentsFile[string(p.kind)])
		cfg.Providers = append(cfg.Providers, ClusterctlProvider{Name: trimType(p), URL: url, Type: string(p.kind)})
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("clusterctl configuration: %w", err)
	}
	return path, nil
}

// appendNew appends v to vs unless it is there, keeping vs in semantic
// version order (a stack's versions are validated semantic versions).
func appendNew(vs []string, v string) []string {
	if slices.Contains(vs, v) {
		return vs
	}
	vs = append(vs, v)
	slices.SortFunc(vs, func(a, b string) int {
		c, err := version.MustParseSemantic(a).Compare(b)
		if err != nil {
			return 0
		}
		return c
	})
	return vs
}

// copyMetadata copies module@version's metadata.yaml (its release series
// and their contracts, which clusterctl plans by) into dir.
func copyMetadata(ctx context.Context, module, version, dir string) error {
	src, err := ModuleDir(ctx, module+"@"+version)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(src, "metadata.yaml"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "metadata.yaml"), data, 0o600)
}

// ModuleDir is the folder of module@version's source in the module cache,
// downloaded through the Go module proxy unless it is there (go mod
// download, run outside any module).
func ModuleDir(ctx context.Context, moduleVersion string) (string, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("reading %s's source needs the go command: %w", moduleVersion, err)
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", moduleVersion)
	cmd.Dir = os.TempDir()
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	runErr := cmd.Run()
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s%s", moduleVersion, runErr, m.Error, bytes.TrimSpace(stderr.Bytes()))
	}
	return m.Dir, nil
}
