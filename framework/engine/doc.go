// Package engine runs one scenario against one provider: it resolves the
// targets, refuses a run that breaks the blast-radius limits, journals
// each fault's undo before injecting it, waits for phases with deadlines,
// evaluates the timing and remediation assertions, undoes every fault on
// every way out, and records a timeline of everything it saw (Run). It
// also defines the words scenarios use (Vocabulary: each fault with its
// undo, each probe) and replays journals after a crash (RunUndo).
//
// engine never panics and never calls Gomega: every failure is an error or
// a verdict with a reason. It reaches providers only through the contract
// (providers) and must not import a provider package, cmd, suites or
// artifacts.
package engine
