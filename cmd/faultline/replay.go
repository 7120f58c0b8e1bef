package main

import (
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/artifacts"
)

// notReplayed are run's flags a replay command leaves out: the ones that
// choose scenarios or where output goes (the replay names its file and
// gets its own folder), --set and --seed (the replay writes the values the
// run used), and the ones that change what happens to faults or output
// rather than where the run goes. User names are left out with the other
// credentials (a password comes from a file the replay names), and so are
// the user and password of any URL (a --vcenter-url may carry them, and
// the replay is written into result.json and JUnit).
var notReplayed = map[string]bool{
	"set": true, "seed": true, "selector": true, "artifacts": true, "output": true, "summary": true,
	"history": true, "gate": true, "dry-run": true, "retain": true, "v": true,
	"vcenter-username": true, "guest-username": true,
}

// replayBase is "faultline run" and every flag given that says where and
// how the scenario ran.
func replayBase(fs *pflag.FlagSet) []string {
	args := []string{"faultline", "run"}
	fs.Visit(func(f *pflag.Flag) {
		if notReplayed[f.Name] {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+artifacts.WithoutUserinfo(v))
			}
			return
		}
		args = append(args, "--"+f.Name+"="+artifacts.WithoutUserinfo(f.Value.String()))
	})
	return args
}
