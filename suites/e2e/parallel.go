package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2" //nolint:revive

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
)

// Under `ginkgo -p` (make test-e2e PARALLEL=N), a suite on the lab runs
// its scenarios side by side, each on a fresh cluster of one warm lab, as
// `faultline run --parallel` does: Ginkgo's first process starts the lab
// and serves runs on it (session.Server, on a Unix socket in a folder of
// its own), and the specs of every process have it carry out their
// scenarios. The scenarios a leased cluster cannot serve
// (session.Place), the checks of the lab's own cluster and the upgrade
// gate are Serial: Ginkgo runs them on the first process, after the
// others, on the lab's own cluster as a serial run would.

// serve has the environment's warm lab serve the runs of every Ginkgo
// process, keeping n clusters of the config's shape ready, and returns the
// folder of its socket.
func (e *Environment) serve(ctx context.Context, n int) (string, error) {
	if e.pool == nil || e.pool.Warm() == nil {
		return "", fmt.Errorf("ginkgo -p: provider %s: expected the lab, whose clusters runs side by side lease (on one shared cluster, each spec's faults would be the others' failures)", e.Config.Provider)
	}
	srv, err := session.NewServer(ctx, e.pool.Warm(), e.Config.Lab.spec(e.Config.Lab.Cluster), n, e.log)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "faultline-suite-")
	if err != nil {
		return "", err
	}
	l, err := session.Listen(dir)
	if err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, l) }()
	e.stopServing = func() error {
		cancel()
		return errors.Join(<-done, os.RemoveAll(dir))
	}
	return dir, nil
}

// servedEnvironment is the environment of a Ginkgo process other than the
// first: the runs of its specs go to the first's lab, served in dir.
func servedEnvironment(cfg *Config, dir string) *Environment {
	return &Environment{Config: cfg, log: ginkgoLogger(), served: dir, closeFn: func(context.Context) error { return nil }}
}

// leasable says why a leased cluster of the served lab cannot run sc, as
// the suite's config adjusts it (its lab's nodes and release); "" when it
// can.
func (c *Config) leasable(sc *scenario.Scenario) string {
	adjusted := *sc
	if err := session.Adjust(&adjusted, session.Adjustments{Nodes: c.Lab.Nodes, Release: c.Lab.release()}); err != nil {
		return err.Error()
	}
	return session.Place(&adjusted, session.ProviderLab).Why
}

// runsServed tells whether the spec of sc, on release ("" the config's),
// runs on the served lab: under ginkgo -p, when a leased cluster serves
// it.
func (e *Environment) runsServed(sc *scenario.Scenario, release string) bool {
	return e.served != "" && release == "" && e.Config.leasable(sc) == ""
}

// runServed has the served lab carry out sc, on a fresh cluster of its
// own, with its artifacts in dir; the lab's lines for people go to the
// spec's output.
func (e *Environment) runServed(ctx context.Context, sc *scenario.Scenario, params map[string]string, dir string) (*engine.Result, error) {
	req := session.NewRunRequest(sc, params, dir)
	req.Release = e.Config.Lab.Release
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	return session.RunServed(ctx, context.Background(), e.served, req, func(m session.RunMessage) {
		if m.Say != "" {
			GinkgoWriter.Print(m.Say)
		}
	})
}
