// Package scenariotest runs catalogue scenarios in providers' tests.
//
// Test helpers only: it imports the engine, the scenario language and the
// catalogue, and must not import a provider package, session, cmd or
// suites.
package scenariotest
