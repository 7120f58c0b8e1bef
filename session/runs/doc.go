// Package runs runs several scenarios: where each runs (session.Place,
// or the executor's own placement), in what order, how many side by side,
// and the lines that show their progress. An Executor carries out one
// scenario: in this process on the lab's pool (the CLI's), or in a pod of
// a Kubernetes Job (package jobs). The CLI's run, run --parallel and
// compare all go through Runner.Run.
package runs
