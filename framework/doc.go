// Package framework runs disaster scenarios: it loads and validates the
// scenario model, resolves targets through a provider, injects faults after
// journaling their undo, waits for phases with deadlines, evaluates timing and
// remediation assertions, and records a timeline of everything it saw.
//
// framework never panics and never calls Gomega: every failure is an error or
// a verdict with a reason.
package framework
