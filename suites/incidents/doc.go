// Package incidents reproduces each seed incident: one spec per scenario
// that reproduces one (label incident), labelled with its seed
// (GINKGO_LABEL_FILTER=seed-003).
//
// It imports suites/e2e and the engine, and no provider package directly.
package incidents
