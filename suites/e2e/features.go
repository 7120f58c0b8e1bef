package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/scenarios/selection"
	"github.com/faultline-dev/faultline/session"
)

// ProviderFunc gives the provider a feature's scenario runs on, from the
// e2e-framework configuration of the test.
type ProviderFunc func(ctx context.Context, cfg *envconf.Config) (providers.Provider, error)

// FromKubeconfig is a ProviderFunc for a Cluster API management cluster:
// the kubeconfig e2e-framework was given (--kubeconfig, $KUBECONFIG). VM
// faults need a vCenter too: open a session.Config with one. The test's
// configuration naming the cluster is the opt-in to destructive runs.
func FromKubeconfig(ctx context.Context, cfg *envconf.Config) (providers.Provider, error) {
	s, err := session.Open(ctx, session.Config{
		Provider:   session.ProviderCAPI,
		Management: session.ManagementConfig{Kubeconfig: cfg.KubeconfigFile()},
		OptedIn:    true,
	})
	if err != nil {
		return nil, err
	}
	return s.Provider, nil
}

type providerKey struct{ scenario string }

// Feature is a scenario (a catalogue name, or a team's own scenario file)
// as an e2e-framework feature, for a user's own `go test` suite: labelled
// with the scenario's labels; Setup
// parses it with params and proves the cluster's baseline healthy; Assess
// runs it (artifacts in dir/<scenario>) and fails the test with the run's
// reason. The run undoes its own faults, so Teardown has nothing left to
// do but report where the artifacts are.
func Feature(name string, provider ProviderFunc, params map[string]string, dir string) types.Feature {
	b := features.New(name)
	var sc *scenario.Scenario
	sources, loadErr := selection.Sources([]string{name})
	if loadErr == nil {
		sc, loadErr = sources[0].Load(params)
	}
	// A file's run folder is by its scenario's name, as a catalogue one's.
	runName := name
	if loadErr == nil {
		runName = sc.Metadata.Name
	}
	if loadErr == nil {
		for k, v := range sc.Metadata.Labels {
			b = b.WithLabel(k, v)
		}
	}
	return b.
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if loadErr != nil {
				t.Fatalf("scenario %s: %v", name, loadErr)
			}
			p, err := provider(ctx, cfg)
			if err != nil {
				t.Fatalf("provider for %s: %v", name, err)
			}
			if sc.Metadata.Labels["destructive"] == "true" {
				// As the Ginkgo specs do: a lab whose Machines just turned
				// Running may still have a Node turning Ready.
				if err := providers.WaitBaseline(ctx, p, 2*time.Second, 5*time.Minute); err != nil {
					t.Fatalf("the cluster before %s: %v", name, err)
				}
			}
			return context.WithValue(ctx, providerKey{name}, p)
		}).
		Assess(SpecText, func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			p, _ := ctx.Value(providerKey{name}).(providers.Provider)
			res, err := session.Execute(ctx, session.ExecuteInput{
				Dir: filepath.Join(dir, runName),
				Run: engine.RunInput{Scenario: sc, Provider: p, Parameters: params},
			})
			if err != nil {
				t.Fatalf("run %s: %v", name, err)
			}
			for _, ph := range res.Phases {
				t.Logf("phase %s: ok=%t %s", ph.Name, ph.OK, durationOr(ph.SinceAnchor, ph.Message))
			}
			switch res.Verdict {
			case engine.Pass:
			case engine.Skipped:
				t.Skipf("%s: %s", name, res.Reason)
			default:
				t.Errorf("%s: %s: %s", name, res.Verdict, res.Reason)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			t.Logf("%s: artifacts in %s", name, filepath.Join(dir, runName))
			return ctx
		}).
		Feature()
}
