package main

import "github.com/faultline-dev/faultline/framework/engine"

// Exit codes of faultline, a stable interface.
const (
	exitPass  = 0
	exitFail  = 1
	exitUsage = 2
	exitInfra = 3
)

// verdictExit maps a verdict to the process exit code: a skipped
// scenario passes, one that did not finish (error, timed out,
// interrupted) is an infrastructure failure.
func verdictExit(v engine.Verdict) int {
	switch v {
	case engine.Pass, engine.Skipped:
		return exitPass
	case engine.Fail:
		return exitFail
	}
	return exitInfra
}
