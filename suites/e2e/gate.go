package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	. "github.com/onsi/ginkgo/v2" //nolint:revive
	. "github.com/onsi/gomega"    //nolint:revive

	"github.com/faultline-dev/faultline/artifacts/scorecard"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
)

// DescribeUpgradeGate adds the preupgrade suite's gate when the e2e
// config names upgrade.to, and returns false otherwise. In one ordered
// container: faultline check's rules on the current release, the scenarios keep accepts run upgrade.runs times on
// lab.release (the current release), those that upgrade the management
// plane go from it to upgrade.to (their parameter release.to) under their
// fault, the others run upgrade.runs times on upgrade.to, and the
// scorecard of the two sides fails the gate on a regression, naming the
// phase. A run's own verdict is recorded there, not asserted: a scenario
// that fails on both releases is the truth of both, not a regression.
func DescribeUpgradeGate(s *Suite, keep func(*scenario.Scenario) bool) bool {
	cfg, err := LoadConfig(DefaultConfig)
	if err != nil || cfg.Upgrade.To == "" {
		return false // describeScenarios reports a config error
	}
	to, runs := cfg.Upgrade.To, cfg.Upgrade.Runs
	var compared, upgrades []described
	for _, d := range gateScenarios(cfg, keep) {
		if d.upgrades {
			upgrades = append(upgrades, d.described)
		} else {
			compared = append(compared, d.described)
		}
	}
	folder := func(parts ...string) string { return filepath.Join(append([]string{s.ArtifactFolder}, parts...)...) }
	// Serial: its runs are on two releases, which no leased cluster of
	// one lab serves.
	Describe(s.Name+" upgrade gate to "+to, Ordered, Serial, ContinueOnFailure, Label("upgrade-gate"), func() {
		Describe("faultline check", Label("checks"), func() {
			ChecksSpec(func() ChecksSpecInput { return ChecksSpecInput{Environment: s.Environment} })
		})
		side := func(name, release string) {
			for round := 1; round <= runs; round++ {
				for _, d := range compared {
					Describe(fmt.Sprintf("%s run %d: %s", name, round, d.name), Label(d.labels...), func() {
						ScenarioSpec(context.Background(), func() ScenarioSpecInput {
							return ScenarioSpecInput{Environment: s.Environment, Scenario: d.name, Source: d.src, Release: release,
								ArtifactFolder: folder(name, "run-"+strconv.Itoa(round)), RecordOnly: true}
						})
					})
				}
			}
		}
		side("base", "")
		for _, d := range upgrades {
			Describe("upgrade to "+to+": "+d.name, Label(d.labels...), func() {
				ScenarioSpec(context.Background(), func() ScenarioSpecInput {
					return ScenarioSpecInput{Environment: s.Environment, Scenario: d.name, Source: d.src,
						ArtifactFolder: folder("upgrade"), Parameters: map[string]string{"release.to": to}}
				})
			})
		}
		side("target", to)
		It("has no regression in the scorecard of the current release against "+to, func() {
			base, target, err := scorecard.ReadDirs(folder("base"), folder("target"))
			Expect(err).NotTo(HaveOccurred())
			sc := scorecard.Compare(baseLabel(s), base, to, target, scorecard.DefaultTolerance)
			Expect(sc.WriteFiles(folder("scorecard"))).To(Succeed())
			var text bytes.Buffer
			Expect(sc.WriteText(&text)).To(Succeed())
			AddReportEntry("scorecard", text.String())
			Expect(sc.Regressions).To(BeZero(), "the scorecard (%s) flags regressions:\n%s", folder("scorecard", "scorecard.html"), text.String())
		})
	})
	return true
}

// gated is a scenario of the gate, and whether it upgrades the
// management plane.
type gated struct {
	described
	upgrades bool
}

// gateScenarios are the suite's scenarios keep accepts, on the lab.
func gateScenarios(cfg *Config, keep func(*scenario.Scenario) bool) []gated {
	sources, err := Sources(cfg)
	if err != nil {
		return nil
	}
	var out []gated
	for _, src := range sources {
		sc, err := src.Load(nil)
		if err != nil || !keep(sc) || (sc.Metadata.Labels["provider"] != "" && sc.Metadata.Labels["provider"] != session.ProviderLab) {
			continue
		}
		out = append(out, gated{described{name: sc.Metadata.Name, src: src, labels: ScenarioLabels(sc)}, session.UpgradesManagement(sc)})
	}
	return out
}

// baseLabel names the base side: the config's release, or the default.
func baseLabel(s *Suite) string {
	if r := s.Environment.Config.Lab.Release; r != "" {
		return r
	}
	return "current"
}
