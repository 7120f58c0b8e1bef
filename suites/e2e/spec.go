package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline-dev/faultline/session"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL, as Cluster API's specs use it
	. "github.com/onsi/gomega"    //nolint:revive

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/scenarios/selection"
)

// ScenarioSpecInput is what ScenarioSpec needs, read when the spec runs.
type ScenarioSpecInput struct {
	Environment *Environment
	// Scenario is the scenario's name: a catalogue scenario's, or the
	// metadata.name of Source's file. The config's parameters are by it.
	Scenario string
	// Source is where the scenario is read from; the catalogue scenario
	// named Scenario when zero.
	Source selection.Source
	// ArtifactFolder receives the run's folder (result.json, junit.xml,
	// report.html, dumps on failure).
	ArtifactFolder string
	// Parameters override the scenario's, over the e2e config's.
	Parameters map[string]string
	// Release, when set, is the release the scenario's lab runs, over
	// the config's lab.release.
	Release string
	// RecordOnly records the run without asserting its verdict (the
	// upgrade gate's runs, which its scorecard judges); a run that could
	// not be carried out (error) still fails the spec.
	RecordOnly bool
	// Next is the scenario the suite runs after this one, nil for none
	// or unknown: the environment prepares its cluster while this one
	// runs (Environment.Prepare).
	Next func() *scenario.Scenario
}

// SpecText is the text of a ScenarioSpec's spec.
const SpecText = "reaches every phase within budget and holds every assertion"

// ScenarioSpec runs one catalogue scenario as a Ginkgo spec, in the style
// of Cluster API's MachineDeploymentRemediationSpec: the same spec on the
// lab, kind or vSphere, whatever the input's environment is. A destructive
// scenario first proves the cluster's baseline healthy (all Machines
// Running, Nodes Ready, as many healthy etcd members as control planes),
// so one scenario's damage never becomes the next one's failure. The spec
// fails with the run's reason, which names the phase and its budget.
func ScenarioSpec(ctx context.Context, inputGetter func() ScenarioSpecInput) {
	var (
		input    ScenarioSpecInput
		sc       *scenario.Scenario
		provider providers.Provider
		params   map[string]string
		// served: the run goes to the lab that serves runs under
		// ginkgo -p (Environment.runsServed).
		served bool
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Environment).NotTo(BeNil(), "ScenarioSpec needs an Environment")
		Expect(input.ArtifactFolder).NotTo(BeEmpty(), "ScenarioSpec needs an ArtifactFolder")
		params = map[string]string{}
		for k, v := range input.Environment.Config.Parameters[input.Scenario] {
			params[k] = v
		}
		for k, v := range input.Parameters {
			params[k] = v
		}
		src := input.Source
		if src == (selection.Source{}) {
			src = selection.Catalogue(input.Scenario)
		}
		var err error
		sc, err = src.Load(params)
		Expect(err).NotTo(HaveOccurred())
		if served = input.Environment.runsServed(sc, input.Release); served {
			return // a fresh cluster of the served lab, Running when leased
		}
		var release func(context.Context) error
		provider, release, err = input.Environment.ProviderOn(ctx, sc, input.Release)
		Expect(err).NotTo(HaveOccurred(), "provider for %s", input.Scenario)
		DeferCleanup(release)
		if sc.Metadata.Labels["destructive"] == "true" {
			By("proving the cluster's baseline healthy")
			Eventually(func() error { return providers.Baseline(ctx, provider) }, input.Environment.Config.Interval("default/wait-baseline")...).
				Should(Succeed(), "the cluster is not healthy before %s", input.Scenario)
		}
		if input.Next != nil {
			if next := input.Next(); next != nil {
				input.Environment.Prepare(ctx, next)
			}
		}
	})

	It(SpecText, func() {
		timeout, _, err := input.Environment.Config.interval("default/scenario")
		Expect(err).NotTo(HaveOccurred())
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		dir := filepath.Join(input.ArtifactFolder, input.Scenario)
		Expect(os.MkdirAll(input.ArtifactFolder, 0o750)).To(Succeed())
		var res *engine.Result
		if served {
			res, err = input.Environment.runServed(rctx, sc, params, dir)
		} else {
			res, err = session.Execute(rctx, session.ExecuteInput{
				Dir: dir, Profile: input.Environment.Profile(), Release: input.Environment.Release(), Log: input.Environment.log,
				Run: engine.RunInput{Scenario: sc, Provider: provider, Parameters: params, Log: logr.Discard()},
			})
		}
		Expect(err).NotTo(HaveOccurred(), "run %s", input.Scenario)
		AddReportEntry("faultline "+input.Scenario, ReportEntryVisibilityFailureOrVerbose, summary(res))
		if res.Verdict == engine.Skipped {
			Skip(fmt.Sprintf("%s: %s", input.Scenario, res.Reason))
		}
		if input.RecordOnly && res.Verdict != engine.Error {
			AddReportEntry("verdict", fmt.Sprintf("%s: %s %s (recorded for the scorecard; artifacts: %s)", input.Scenario, res.Verdict, res.Reason, dir))
			return
		}
		Expect(res.Verdict).To(Equal(engine.Pass), "%s: %s (artifacts: %s)", input.Scenario, res.Reason, dir)
	})
}

// summary is a run's phases and assertions, one a line.
func summary(res *engine.Result) string {
	s := fmt.Sprintf("%s on %s: %s %s\n", res.Scenario, res.Provider, res.Verdict, res.Reason)
	for _, p := range res.Phases {
		s += fmt.Sprintf("  phase %s: ok=%t %s\n", p.Name, p.OK, durationOr(p.SinceAnchor, p.Message))
	}
	for _, a := range res.Assertions {
		s += fmt.Sprintf("  assert %s: ok=%t %s\n", a.Name, a.OK, a.Message)
	}
	return s
}

func durationOr(d *scenario.Duration, otherwise string) string {
	if d == nil {
		return otherwise
	}
	return d.String()
}
