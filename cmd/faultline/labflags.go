package main

import (
	"io"
	stdlog "log"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/session"
)

// labStartTimeout bounds the lab's start under the compressed profile
// (session.LabWait gives the real one's): envtest, the controllers and the
// first Machines Running.
const labStartTimeout = session.DefaultLabWait

// labFlags choose how the embedded lab runs.
type labFlags struct {
	profile string
	assets  string
	// nodes, when set, replaces the clusters' spec.lab.nodes; release
	// their spec.lab.release.
	nodes   string
	release string
}

func (f *labFlags) register(fs *pflag.FlagSet) {
	f.registerShape(fs)
	fs.StringVar(&f.release, "release", "", "the Cluster API and CAPV stack the lab runs: a stack's name or CAPI_VERSION+CAPV_VERSION ('faultline lab releases' lists them; a stack not compiled in is built on first use) (default the scenario's spec.lab.release, then "+lab.Stacks()[0].Name+")")
}

// registerShape registers every lab flag but --release (compare gives
// each side its own).
func (f *labFlags) registerShape(fs *pflag.FlagSet) {
	fs.StringVar(&f.profile, "profile", lab.DefaultProfile, "lab time profile: compressed (seconds) or real (upstream defaults)")
	fs.StringVar(&f.nodes, "nodes", "", "what the lab's VMs are: simulated (the node simulator, seconds-fast) or containers (real nodes: containers of the kind node image booted by real kubeadm; needs docker and hack/kind-image.sh) (default the scenario's spec.lab.nodes, then simulated)")
	fs.StringVar(&f.assets, "assets", "", "folder with kube-apiserver and etcd for the lab (default $"+lab.AssetsEnv+", setup-envtest's cache, ./bin/envtest, ~/.cache/faultline/envtest)")
}

// validate checks --profile, --release and --nodes.
func (f *labFlags) validate() error {
	if _, err := lab.ProfileNamed(f.profile); err != nil {
		return usageErr("--profile: %v", err)
	}
	if _, err := f.stack(); err != nil {
		return err
	}
	switch f.nodes {
	case "", scenario.NodesSimulated, scenario.NodesContainers:
		return nil
	}
	return usageErr("--nodes %q: expected %s or %s", f.nodes, scenario.NodesSimulated, scenario.NodesContainers)
}

// releaseFlag is --release as a Release, zero when not given.
func (f *labFlags) releaseFlag() lab.Release {
	if f.release == "" {
		return lab.Release{}
	}
	return lab.ParseRelease(f.release)
}

// stack is the stack --release names, the default one when not given.
func (f *labFlags) stack() (lab.Stack, error) {
	s, err := f.releaseFlag().Resolve()
	if err != nil {
		return s, usageErr("--release %q: %v", f.release, err)
	}
	return s, nil
}

// config is the session's lab configuration for clusters (none: a
// vCenter simulator alone); the lab's warnings go to stderr. It routes
// the libraries' loggers: main's business, done once per process.
func (f *labFlags) config(log logr.Logger, stderr io.Writer, clusters ...lab.ClusterSpec) (session.LabConfig, error) {
	if err := f.validate(); err != nil {
		return session.LabConfig{}, err
	}
	p, _ := lab.ProfileNamed(f.profile)
	// The controllers log what they do at level 0 and their transient
	// errors often; users see them from -v 2 on.
	labLog := logr.Discard()
	if log.V(2).Enabled() {
		labLog = log.WithName("lab")
	} else {
		// vcsim's HTTP server reports CAPV's REST clients' failed TLS
		// handshakes through the standard logger.
		stdlog.SetOutput(io.Discard)
	}
	lab.RouteLibraryLogs(labLog)
	// CAPV then makes one TLS handshake per connection to vcsim, not two.
	cleanup, err := lab.TrustLabCertificates()
	if err != nil {
		return session.LabConfig{}, infraErr(err)
	}
	undoAtEnd(cleanup)
	return session.LabConfig{Clusters: clusters, Profile: p, Assets: f.assets, Wait: session.LabWait(p), Log: labLog, Warn: warnTo(stderr)}, nil
}
