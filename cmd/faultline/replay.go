package main

import (
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/providers/vsphere"
	"github.com/faultline-dev/faultline/session"
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

// envFlags are the flags whose default comes from the environment, and
// the variable: where a run went by the environment, its replay names it
// as the flag (a replay on another shell or runner goes to the same
// place). Credentials are never among them.
var envFlags = []struct{ flag, env string }{
	{"kubeconfig", "KUBECONFIG"},
	{"vcenter-url", vsphere.EnvURL}, {"vcenter-ca-file", vsphere.EnvCACerts},
	{"vcenter-known-hosts", vsphere.EnvKnownHosts}, {"vcenter-datacenter", vsphere.EnvDatacenter},
}

// replayBase is "faultline run" and every flag given that says where and
// how the scenario ran, with those the environment gave (envFlags) on a
// provider that reads them.
func replayBase(fs *pflag.FlagSet, getenv func(string) string) []string {
	args := []string{"faultline", "run"}
	provider, _ := fs.GetString("provider")
	if provider == session.ProviderCAPI || provider == session.ProviderVSphere {
		for _, e := range envFlags {
			if v := getenv(e.env); v != "" && fs.Lookup(e.flag) != nil && !fs.Changed(e.flag) {
				args = append(args, "--"+e.flag+"="+artifacts.WithoutUserinfo(v))
			}
		}
	}
	return append(args, givenFlags(fs, func(name string) bool { return !notReplayed[name] }, artifacts.WithoutUserinfo)...)
}

// givenFlags are the flags of fs given on the command line that keep
// takes, as --name=value words (one per value of a repeated flag), each
// value passed through clean.
func givenFlags(fs *pflag.FlagSet, keep func(name string) bool, clean func(string) string) []string {
	var args []string
	fs.Visit(func(f *pflag.Flag) {
		if !keep(f.Name) {
			return
		}
		values := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			args = append(args, "--"+f.Name+"="+clean(v))
		}
	})
	return args
}
