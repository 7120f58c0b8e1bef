// Package nightly is the nightly resilience suite: the whole catalogue,
// each scenario a spec labelled with its scenario's labels. It must go red
// when recovery regresses.
//
// It imports suites/e2e and the engine, and no provider package directly.
package nightly
