package main

import (
	"context"
	"fmt"
	"io"
	stdlog "log"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/providers/lab"
)

// labStartTimeout bounds the lab's start: envtest, the controllers and the
// first Machines Running.
const labStartTimeout = 5 * time.Minute

// labFlags choose how the embedded lab runs.
type labFlags struct {
	profile string
	assets  string
}

func (f *labFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.profile, "profile", lab.DefaultProfile, "lab time profile: compressed (seconds) or real (upstream defaults)")
	fs.StringVar(&f.assets, "assets", "", "folder with kube-apiserver and etcd for the lab (default $"+lab.AssetsEnv+", setup-envtest's cache, ./bin/envtest, ~/.cache/faultline/envtest)")
}

// start starts a lab with one cluster and waits for its Machines.
func (f *labFlags) start(ctx context.Context, cluster lab.ClusterSpec, stderr io.Writer, log logr.Logger) (*lab.Lab, error) {
	p, err := lab.ProfileNamed(f.profile)
	if err != nil {
		return nil, usageErr("--profile: %v", err)
	}
	if _, err := lab.FindAssets(f.assets); err != nil {
		return nil, usageErr("%v", err)
	}
	started := time.Now()
	fmt.Fprintf(stderr, "lab: starting cluster %s (%d control planes, %d workers, %s time profile)\n", cluster.Name, cluster.ControlPlanes, cluster.Workers, p.Name)
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
	l, err := lab.Start(ctx, lab.Input{Assets: f.assets, Profile: p, Clusters: []lab.ClusterSpec{cluster}, Log: labLog})
	if err != nil {
		return nil, infraErr(err)
	}
	wctx, cancel := context.WithTimeout(ctx, labStartTimeout)
	defer cancel()
	if err := l.WaitReady(wctx); err != nil {
		return nil, infraErr(fmt.Errorf("%w (stop: %v)", err, l.Stop(context.WithoutCancel(ctx))))
	}
	fmt.Fprintf(stderr, "lab: all Machines Running in %s\n", time.Since(started).Round(100*time.Millisecond))
	return l, nil
}
