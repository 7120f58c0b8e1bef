package session

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/regularfile"
)

// recordRun completes res.Run with what the caller knows: faultline's
// version, the host, the scenario file copied into the run folder, and the
// command that runs it again.
func recordRun(res *engine.Result, in ExecuteInput) error {
	if res.Run == nil {
		res.Run = &engine.RunInfo{}
	}
	ri := res.Run
	ri.Faultline = in.Faultline
	if h, err := os.Hostname(); err == nil {
		ri.Host = h
	}
	file := ""
	if sc := in.Run.Scenario; sc != nil && len(sc.Text) > 0 {
		file = filepath.Join(in.Dir, artifacts.ScenarioFile)
		if err := regularfile.WriteFile(file, sc.Text, 0o644); err != nil {
			return fmt.Errorf("copy the scenario into the run folder: %w", err)
		}
		ri.ScenarioFile = artifacts.ScenarioFile
	}
	if len(in.Replay) > 0 && file != "" {
		ri.Replay = replayCommand(in.Replay, file, ri.Sets, ri.Seed)
	}
	return nil
}

// replayCommand is base, the scenario file, each --set in name order and
// the seed, quoted for a POSIX shell.
func replayCommand(base []string, file string, sets map[string]string, seed *int64) string {
	args := append(slices.Clone(base), file)
	for _, k := range slices.Sorted(maps.Keys(sets)) {
		args = append(args, "--set", k+"="+sets[k])
	}
	if seed != nil {
		args = append(args, fmt.Sprintf("--seed=%d", *seed))
	}
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:=,@%+-]+$`)

// shellQuote leaves a word a shell reads as is alone and puts any other in
// single quotes.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
