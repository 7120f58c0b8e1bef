package examples

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/suites/e2e"
)

// TestIntegrationScenarioAsFeature runs stop-kubelet-worker as an
// e2e-framework feature. Against a real management cluster the provider
// would be e2e.FromKubeconfig and the test's --kubeconfig; here it is a lab
// the test starts, whose management kubeconfig e2e-framework is given.
func TestIntegrationScenarioAsFeature(t *testing.T) {
	l := labtest.Start(t, lab.ClusterSpec{Name: "lab", LabSpec: scenario.LabSpec{ControlPlanes: 1, Workers: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kubeconfigs, err := l.WriteKubeconfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testenv := env.NewWithConfig(envconf.New().WithKubeconfigFile(kubeconfigs[0]))
	inLab := func(context.Context, *envconf.Config) (providers.Provider, error) { return l.Provider(), nil }
	testenv.Test(t, e2e.Feature("stop-kubelet-worker", inLab, nil, t.TempDir()))
}
