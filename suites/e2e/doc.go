// Package e2e is what faultline's Ginkgo suites share, in the style of
// Cluster API's test/e2e: a configuration file (E2E_CONFIG) with the
// provider, the cluster the suite shares, intervals and per-scenario
// parameters; the environment a suite starts once; and reusable specs
// (ScenarioSpec, ChecksSpec) that run the same way on the lab, on kind and
// on vSphere. Nothing in a spec is a hard-coded interval or budget.
//
// It may import everything but cmd.
package e2e
