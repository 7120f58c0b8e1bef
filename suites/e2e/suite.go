package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2" //nolint:revive
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega" //nolint:revive

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/scenarios/selection"
)

// DefaultConfig is the e2e config a suite reads when E2E_CONFIG is unset,
// relative to the suite's folder.
const DefaultConfig = "../config/lab.yaml"

// Suite is one suite's shared state: its config, environment and
// artifacts folder, set up once for the whole run.
type Suite struct {
	Name           string
	Config         *Config
	Environment    *Environment
	ArtifactFolder string
	// order is DescribeScenarios' scenarios in the order their specs
	// run.
	order []described
}

// described is a scenario DescribeScenarios gave a spec.
type described struct {
	name, provider string
	src            selection.Source
	labels         []string
	// serial: a leased cluster cannot serve it; under ginkgo -p it runs
	// on the first process, after the others.
	serial bool
}

// NewSuite registers the suite's SynchronizedBeforeSuite, which loads the
// config and starts the environment (one lab, or the connection to
// vSphere), and its SynchronizedAfterSuite, which stops it. A suite runs
// its specs one after the other, every spec damaging the cluster it runs
// on; under ginkgo -p, on the lab only, side by side, each on a fresh
// cluster of the first process's lab (parallel.go).
func NewSuite(name string) *Suite {
	s := &Suite{Name: name}
	SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
		suiteConfig, _ := GinkgoConfiguration()
		s.load()
		By("starting the " + s.Config.Provider + " environment")
		var err error
		s.Environment, err = Setup(context.WithoutCancel(ctx), s.Config, ginkgoLogger(), s.next(""))
		Expect(err).NotTo(HaveOccurred())
		if suiteConfig.ParallelTotal == 1 {
			return nil
		}
		By(fmt.Sprintf("serving the lab's clusters to %d Ginkgo processes", suiteConfig.ParallelTotal))
		dir, err := s.Environment.serve(ctx, suiteConfig.ParallelTotal)
		Expect(err).NotTo(HaveOccurred())
		return []byte(dir)
	}, func(served []byte) {
		switch {
		case len(served) == 0:
		case s.Environment != nil: // the first process
			s.Environment.served = string(served)
		default:
			s.load()
			s.Environment = servedEnvironment(s.Config, string(served))
		}
	})
	SynchronizedAfterSuite(func() {}, func(ctx SpecContext) {
		if s.Environment != nil {
			Expect(s.Environment.Teardown(context.WithoutCancel(ctx))).To(Succeed())
		}
	})
	return s
}

// load reads the suite's config and makes its artifacts folder.
func (s *Suite) load() {
	cfg, err := LoadConfig(DefaultConfig)
	Expect(err).NotTo(HaveOccurred())
	s.Config = cfg
	s.ArtifactFolder, err = filepath.Abs(filepath.Join(artifacts.Root(), s.Name))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.MkdirAll(s.ArtifactFolder, 0o750)).To(Succeed())
}

// DescribeScenarios adds a ScenarioSpec for every scenario of the suite
// (Sources: the catalogue's and a team's own files) that keep accepts,
// labelled with the scenario's labels ("tier:core", "destructive",
// "seed-002") so GINKGO_LABEL_FILTER selects them. They are in one
// container named after the suite, which Ginkgo runs in order (it
// shuffles top-level containers only, unless --randomize-all): so each
// spec knows the next one, whose cluster the lab prepares meanwhile.
func DescribeScenarios(s *Suite, keep func(*scenario.Scenario) bool) bool {
	Describe(s.Name, func() { describeScenarios(s, keep) })
	return true
}

func describeScenarios(s *Suite, keep func(*scenario.Scenario) bool) {
	cfg, err := LoadConfig(DefaultConfig)
	var sources []selection.Source
	if err == nil {
		sources, err = Sources(cfg)
	}
	if err != nil {
		It("finds its scenarios", func() { Fail(err.Error()) })
		return
	}
	seen := map[string]selection.Source{}
	for _, src := range sources {
		sc, err := src.Load(nil)
		if err == nil {
			if prev, ok := seen[sc.Metadata.Name]; ok {
				err = fmt.Errorf("scenario %s of %s has the name of %s's: each needs its own (artifacts and parameters are by name)", sc.Metadata.Name, src, prev)
			}
		}
		if err != nil {
			// The catalogue is built in and hack/verify.sh validates it;
			// a broken file fails its spec, not the whole tree.
			It(src.String(), func() { Fail(err.Error()) })
			continue
		}
		name := sc.Metadata.Name
		seen[name] = src
		if !keep(sc) {
			continue
		}
		s.order = append(s.order, described{name: name, provider: sc.Metadata.Labels["provider"], src: src, labels: ScenarioLabels(sc),
			serial: cfg.leasable(sc) != ""})
	}
	for _, d := range s.order {
		name, provider, src := d.name, d.provider, d.src
		args := []any{Label(d.labels...)}
		if d.serial {
			args = append(args, Serial)
		}
		Describe(name, append(args, func() {
			BeforeEach(func() {
				if provider != "" && s.Config != nil && provider != s.Config.Provider {
					Skip("scenario " + name + " runs on provider " + provider + "; this suite runs on " + s.Config.Provider)
				}
			})
			ScenarioSpec(context.Background(), func() ScenarioSpecInput {
				return ScenarioSpecInput{
					Environment: s.Environment, Scenario: name, Source: src, ArtifactFolder: s.ArtifactFolder,
					Next: func() *scenario.Scenario { return s.next(name) },
				}
			})
		})...)
	}
}

// next is the scenario whose spec runs after scenario after's (the first
// for ""), as far as the suite can tell before Ginkgo runs it: the next of its order on the
// suite's provider that Ginkgo's label filter, focus and skip keep. Nil
// when there is none, or Ginkgo randomizes all specs. A wrong guess costs
// a cluster prepared for nothing.
func (s *Suite) next(after string) *scenario.Scenario {
	cfg, _ := GinkgoConfiguration()
	if cfg.RandomizeAllSpecs || s.Config == nil {
		return nil
	}
	runs, err := ginkgoKeeps(cfg)
	if err != nil {
		return nil
	}
	i := slices.IndexFunc(s.order, func(d described) bool { return d.name == after })
	for _, d := range s.order[i+1:] {
		if d.provider != "" && d.provider != s.Config.Provider {
			continue
		}
		if !runs(d.labels, strings.Join([]string{suiteDescription, s.Name, d.name, SpecText}, " ")) {
			continue
		}
		sc, err := d.src.Load(s.Config.Parameters[d.name])
		if err != nil {
			return nil
		}
		return sc
	}
	return nil
}

// suiteDescription is RunSuite's description, which Ginkgo's focus and
// skip match with a spec's text.
var suiteDescription string

// ginkgoKeeps tells whether Ginkgo runs a spec of these labels and text,
// by the suite config's label filter, focus and skip, as Ginkgo decides
// it (internal/focus.go).
func ginkgoKeeps(cfg types.SuiteConfig) (func(labels []string, text string) bool, error) {
	labels := func([]string) bool { return true }
	if cfg.LabelFilter != "" {
		f, err := types.ParseLabelFilter(cfg.LabelFilter)
		if err != nil {
			return nil, err
		}
		labels = f
	}
	var focus, skip *regexp.Regexp
	var err error
	if len(cfg.FocusStrings) > 0 {
		if focus, err = regexp.Compile(strings.Join(cfg.FocusStrings, "|")); err != nil {
			return nil, err
		}
	}
	if len(cfg.SkipStrings) > 0 {
		if skip, err = regexp.Compile(strings.Join(cfg.SkipStrings, "|")); err != nil {
			return nil, err
		}
	}
	return func(l []string, text string) bool {
		return labels(l) && (focus == nil || focus.MatchString(text)) && (skip == nil || !skip.MatchString(text))
	}, nil
}

// ScenarioLabels are a scenario's labels as Ginkgo labels: the key for "true",
// key:value otherwise.
func ScenarioLabels(sc *scenario.Scenario) []string {
	var out []string
	for k, v := range sc.Metadata.Labels {
		if v == "true" {
			out = append(out, k)
		} else {
			out = append(out, k+":"+v)
		}
	}
	sort.Strings(out)
	return out
}

// ginkgoLogger writes the lab's and faultline's logs to the spec's
// output.
func ginkgoLogger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		GinkgoWriter.Println(strings.TrimSpace(prefix + " " + args))
	}, funcr.Options{})
}

// EnvE2E gates the suites: `make test-e2e` sets it, so `go test ./...`
// does not start labs for them.
const EnvE2E = "FAULTLINE_E2E"

// RunSuite runs the suite's specs, or skips them when EnvE2E is unset.
// The suite's test registers Gomega's fail handler first, as a Ginkgo
// suite does: its import of Ginkgo is how the ginkgo CLI (ginkgo -p) knows
// the package for a suite.
func RunSuite(t *testing.T, description string) {
	if os.Getenv(EnvE2E) == "" {
		t.Skipf("e2e suite: run it with make test-e2e (or %s=1)", EnvE2E)
	}
	suiteDescription = description
	RunSpecs(t, description)
}
