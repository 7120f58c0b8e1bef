package e2e

import (
	"fmt"
	"github.com/faultline-dev/faultline/session"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
)

// Environment variables the suites read, as `make test-e2e` sets them.
const (
	EnvConfig   = "E2E_CONFIG"
	EnvProvider = "PROVIDER"
	// EnvNodes overrides lab.nodes: simulated or containers.
	EnvNodes = "NODES"
	// EnvRelease overrides lab.release: the stack the lab runs.
	EnvRelease = "E2E_RELEASE"
	// EnvScenarios adds scenario files and folders (comma-separated) to
	// the config's scenarios.paths; EnvCatalogue "false" leaves the
	// catalogue out.
	EnvScenarios = "E2E_SCENARIOS"
	EnvCatalogue = "E2E_CATALOGUE"
	// EnvUpgradeTo overrides upgrade.to and EnvUpgradeRuns upgrade.runs:
	// the preupgrade suite's gate.
	EnvUpgradeTo   = "E2E_UPGRADE_TO"
	EnvUpgradeRuns = "E2E_UPGRADE_RUNS"
)

// suiteProviders are the providers a suite runs on: vsphere is a
// management cluster and the vCenter behind it.
var suiteProviders = []string{session.ProviderLab, session.ProviderKind, session.ProviderVSphere}

// Config is the e2e configuration file.
type Config struct {
	// Provider is lab, kind or vsphere; $PROVIDER overrides it.
	Provider string `json:"provider"`
	// Lab is the cluster a lab suite shares; scenarios whose spec.lab it
	// does not serve get a lab of their own.
	Lab LabConfig `json:"lab"`
	// Management and VCenter reach real infrastructure (provider vsphere);
	// credentials come from the environment (GOVC_USERNAME,
	// GOVC_PASSWORD), never from this file.
	Management ClusterConfig `json:"management"`
	VCenter    VCenterConfig `json:"vcenter"`
	// Kind is the kind cluster a kind suite runs on.
	Kind KindConfig `json:"kind"`
	// Intervals are [timeout, poll] pairs by name, as in Cluster API's e2e
	// config: "default/wait-baseline" and so on.
	Intervals map[string][]string `json:"intervals"`
	// Parameters override scenario parameters (budgets, windows), by
	// scenario name, as `faultline run --set` does.
	Parameters map[string]map[string]string `json:"parameters"`
	// Scenarios are a team's own scenarios, beside the catalogue's or
	// instead of them.
	Scenarios ScenariosConfig `json:"scenarios"`
	// Upgrade is the preupgrade suite's gate on the lab: from lab.release
	// to upgrade.to.
	Upgrade UpgradeConfig `json:"upgrade"`
	// dir is the config file's folder, which scenarios.paths are relative
	// to.
	dir string
}

// UpgradeConfig is the upgrade gate: the scenarios run Runs times on
// lab.release, the upgrade scenarios go from it to To (their parameter
// release.to), the same scenarios run Runs times on To, and the
// scorecard of the two sides fails the suite on a regression.
type UpgradeConfig struct {
	// To is the release to upgrade to; empty, there is no gate.
	To   string `json:"to"`
	Runs int    `json:"runs"`
}

// ScenariosConfig says which scenarios a suite describes.
type ScenariosConfig struct {
	// Paths are scenario files and folders of them, relative to the
	// config file.
	Paths []string `json:"paths"`
	// Catalogue false leaves faultline's catalogue out.
	Catalogue *bool `json:"catalogue"`
}

// LabConfig is the shared lab cluster.
type LabConfig struct {
	Profile string `json:"profile"`
	// Cluster is the cluster, as a scenario's spec.lab says it.
	Cluster scenario.LabSpec `json:"cluster"`
	// Nodes, when set, is what every lab cluster's VMs are, whatever the
	// scenarios' spec.lab.nodes say: simulated, or containers (the
	// real-node tier); $NODES overrides it.
	Nodes string `json:"nodes"`
	// Release, when set, is the stack every lab runs, whatever the
	// scenarios' spec.lab.release say (a stack's name or
	// CAPI_VERSION+CAPV_VERSION); $E2E_RELEASE overrides it.
	Release string `json:"release"`
}

// release is the config's release, zero when it names none.
func (l LabConfig) release() scenario.Release {
	if l.Release == "" {
		return scenario.Release{}
	}
	return lab.ParseRelease(l.Release)
}

// spec is s on the nodes and the stack the config chose.
func (l LabConfig) spec(s scenario.LabSpec) scenario.LabSpec {
	if l.Nodes != "" {
		s.Nodes = l.Nodes
	}
	if r := l.release(); !r.IsZero() {
		s.Release = r
	}
	return s
}

// KindConfig is the kind cluster of provider kind: one the suite creates
// (and deletes) from the newest local faultline.dev/kind-node image, or an
// existing one by name.
type KindConfig struct {
	Name          string `json:"name"`
	ControlPlanes int    `json:"controlPlanes"`
	Workers       int    `json:"workers"`
	// Image is the node image; "" takes the newest local one.
	Image string `json:"image"`
	// Existing: the cluster exists already (made by 'faultline kind up' or
	// by kind); the suite neither creates nor deletes it.
	Existing bool `json:"existing"`
}

// ClusterConfig reaches a Cluster API management cluster.
type ClusterConfig struct {
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context"`
}

// VCenterConfig reaches a vCenter.
type VCenterConfig struct {
	URL        string `json:"url"`
	CAFile     string `json:"caFile"`
	Datacenter string `json:"datacenter"`
}

// requiredIntervals are the intervals every suite uses.
var requiredIntervals = []string{"default/wait-lab", "default/wait-baseline", "default/scenario"}

// LoadConfig reads the file $E2E_CONFIG names (path when it is unset) and
// applies $PROVIDER. Errors name the file and the field.
func LoadConfig(path string) (*Config, error) {
	if p := os.Getenv(EnvConfig); p != "" {
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("e2e config: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("e2e config %s: %w", path, err)
	}
	c.dir = filepath.Dir(path)
	if p := os.Getenv(EnvProvider); p != "" {
		c.Provider = p
	}
	if n := os.Getenv(EnvNodes); n != "" {
		c.Lab.Nodes = n
	}
	if r := os.Getenv(EnvRelease); r != "" {
		c.Lab.Release = r
	}
	if t := os.Getenv(EnvUpgradeTo); t != "" {
		c.Upgrade.To = t
	}
	if r := os.Getenv(EnvUpgradeRuns); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil {
			return nil, fmt.Errorf("$%s %q: expected a whole number of runs", EnvUpgradeRuns, r)
		}
		c.Upgrade.Runs = n
	}
	var errs []string
	errs = append(errs, c.Upgrade.validate(c.Provider)...)
	if _, err := c.Lab.release().Resolve(); err != nil {
		errs = append(errs, fmt.Sprintf("lab.release: %v", err))
	} else if c.Lab.Release != "" && c.Provider != session.ProviderLab {
		errs = append(errs, fmt.Sprintf("lab.release (or $%s) %q: the lab's stack; provider %s runs its cluster's own release", EnvRelease, c.Lab.Release, c.Provider))
	}
	switch c.Lab.Nodes {
	case "", scenario.NodesSimulated, scenario.NodesContainers:
	default:
		errs = append(errs, fmt.Sprintf("lab.nodes: got %q, expected %s or %s", c.Lab.Nodes, scenario.NodesSimulated, scenario.NodesContainers))
	}
	if !slices.Contains(suiteProviders, c.Provider) {
		errs = append(errs, fmt.Sprintf("provider: got %q, expected one of %s", c.Provider, strings.Join(suiteProviders, ", ")))
	}
	if c.Provider == session.ProviderKind {
		switch {
		case c.Kind.Name == "":
			errs = append(errs, "kind.name: required with provider kind")
		case !c.Kind.Existing && c.Kind.ControlPlanes < 1:
			errs = append(errs, fmt.Sprintf("kind.controlPlanes: got %d, expected 1 or more", c.Kind.ControlPlanes))
		case c.Kind.Workers < 0:
			errs = append(errs, fmt.Sprintf("kind.workers: got %d, expected 0 or more", c.Kind.Workers))
		}
	}
	names := make([]string, 0, len(c.Intervals))
	for name := range c.Intervals {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, _, err := c.interval(name); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, name := range requiredIntervals {
		if _, ok := c.Intervals[name]; !ok {
			errs = append(errs, fmt.Sprintf("intervals.%s: required", name))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("e2e config %s: %s", path, strings.Join(errs, "; "))
	}
	return &c, nil
}

// validate checks the gate: a release the lab has, on the lab.
func (u *UpgradeConfig) validate(provider string) []string {
	if u.To == "" {
		return nil
	}
	var errs []string
	if _, err := lab.ParseRelease(u.To).Resolve(); err != nil {
		errs = append(errs, fmt.Sprintf("upgrade.to (or $%s): %v", EnvUpgradeTo, err))
	}
	if provider != session.ProviderLab {
		errs = append(errs, fmt.Sprintf("upgrade.to (or $%s) %q: the gate upgrades the lab's management plane; provider %s is not the lab", EnvUpgradeTo, u.To, provider))
	}
	switch {
	case u.Runs == 0:
		u.Runs = 1
	case u.Runs < 0:
		errs = append(errs, fmt.Sprintf("upgrade.runs (or $%s): got %d, expected 1 or more", EnvUpgradeRuns, u.Runs))
	}
	return errs
}

// Interval returns the named [timeout, poll] pair in the form Gomega's
// Eventually takes.
func (c *Config) Interval(name string) []any {
	timeout, poll, err := c.interval(name)
	if err != nil {
		panic(err) // LoadConfig checked every interval
	}
	return []any{timeout, poll}
}

func (c *Config) interval(name string) (time.Duration, time.Duration, error) {
	v, ok := c.Intervals[name]
	if !ok {
		return 0, 0, fmt.Errorf("intervals.%s: not in the e2e config", name)
	}
	if len(v) != 2 {
		return 0, 0, fmt.Errorf("intervals.%s: got %d values, expected [timeout, poll]", name, len(v))
	}
	timeout, err := time.ParseDuration(v[0])
	if err != nil || timeout <= 0 {
		return 0, 0, fmt.Errorf("intervals.%s[0]: got %q, expected a positive duration such as 5m", name, v[0])
	}
	poll, err := time.ParseDuration(v[1])
	if err != nil || poll <= 0 || poll > timeout {
		return 0, 0, fmt.Errorf("intervals.%s[1]: got %q, expected a positive duration below the timeout", name, v[1])
	}
	return timeout, poll, nil
}
