package main

import (
	"fmt"
	"io"
	"regexp"

	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/session"
	"github.com/faultline-dev/faultline/session/runs/jobs"
)

// onClusterFlags run the scenarios as the pods of a Kubernetes Job
// (--on-cluster), each with a lab of its own.
type onClusterFlags struct {
	// context is the kubeconfig context of the cluster that runs the Job.
	context   string
	namespace string
	image     string
	// emit: this run is a pod's, and sends its run folder back on stdout
	// (hidden; the Job's pods pass it).
	emit bool
}

// jobsNamespace is the namespace deploy/runs makes for the Jobs.
const jobsNamespace = "faultline-runs"

func (f *onClusterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.context, "on-cluster", "", "run each scenario in a pod of one Indexed Job on the cluster of this kubeconfig context (--kubeconfig, $KUBECONFIG), each pod with a lab of its own; --parallel pods at a time; their results and run folders come back here (apply deploy/runs there first)")
	fs.StringVar(&f.namespace, "namespace", jobsNamespace, "with --on-cluster: the namespace of the Job, set up by deploy/runs")
	fs.StringVar(&f.image, "image", "", "faultline's image on the cluster's nodes: --on-cluster's Job runs it, and with --provider capi so does the probe pod that proves vcenter.unreachable's cut (default faultline.dev/faultline:<this version>, as hack/image.sh tags it)")
	fs.BoolVar(&f.emit, "emit-run-folder", false, "after the run, write its folder to stdout as a Job's pod sends it back")
	_ = fs.MarkHidden("emit-run-folder")
}

// podFlags are the flags of run a Job's pod gets as given here: how the
// scenario and its lab run. The others say where (the pod runs its own
// lab) or what happens here (history, output), or are refused with
// --on-cluster (checkOnCluster).
var podFlags = map[string]bool{
	"set": true, "release": true, "profile": true, "nodes": true, "timeout": true, "setup-timeout": true,
	"seed": true, "dry-run": true, "v": true,
}

// checkOnCluster refuses what --on-cluster cannot honour, and sets the
// default image.
func (o *runOptions) checkOnCluster(fs *pflag.FlagSet) error {
	f := &o.onCluster
	if f.context == "" {
		if fs.Changed("namespace") {
			return usageErr("--namespace says where --on-cluster runs its Job; it does nothing without --on-cluster")
		}
		if fs.Changed("image") && o.provider != session.ProviderCAPI {
			return usageErr("--image says what --on-cluster's Job runs, or, with --provider capi, vcenter.unreachable's probe pod; it does nothing here")
		}
		if f.image == "" {
			f.image, _ = ownImage()
		}
		return nil
	}
	switch {
	case o.provider != session.ProviderLab:
		return usageErr("--on-cluster runs each scenario on a lab of its own in its pod; it does not run with --provider %s", o.provider)
	case o.served != "" && o.servedNamed:
		return usageErr("--on-cluster runs each scenario on a lab of its own in its pod; --lab names a lab here")
	case o.lab.nodes == "containers":
		return usageErr("--nodes containers: a pod runs no containers of its own; --on-cluster runs simulated nodes")
	case o.retain:
		return usageErr("--retain leaves faults in place, and a pod's lab goes with its pod: it does nothing with --on-cluster")
	case fs.Changed("context"):
		return usageErr("--on-cluster names the kubeconfig context of the Job's cluster; --context does nothing with it")
	case !validName.MatchString(f.namespace):
		return usageErr("--namespace %q: expected a Kubernetes namespace name (lower-case letters, digits and '-')", f.namespace)
	}
	if f.image == "" {
		image, ok := ownImage()
		if !ok {
			return usageErr("--image: this faultline (version %s) was not built by hack/image.sh; pass the image the cluster's nodes have (hack/image.sh prints its tag)", versionString())
		}
		f.image = image
	}
	o.served = "" // each pod runs its own lab, never one served here
	return nil
}

var (
	validName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// imageVersion is a version hack/image.sh builds (v0.1.0-<commit>)
	// or a release's.
	imageVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9a-z.]+)?$`)
)

// ownImage is the image hack/image.sh tags this faultline with; false
// when it was not built by it.
func ownImage() (string, bool) {
	v := versionString()
	if !imageVersion.MatchString(v) {
		return "", false
	}
	return "faultline.dev/faultline:" + v, true
}

// podArgs are the flags given here that a Job's pod passes to its run.
func podArgs(fs *pflag.FlagSet) []string {
	return givenFlags(fs, func(name string) bool { return podFlags[name] }, func(v string) string { return v })
}

// jobsExecutor is the executor of --on-cluster: the Job's cluster
// reached through the kubeconfig.
func (o *runOptions) jobsExecutor(history *artifacts.History, stderr io.Writer) (*jobs.Executor, error) {
	f := &o.onCluster
	rest, err := session.ClusterREST(o.cluster.kubeconfig, f.context, o.cluster.flagName())
	if err != nil {
		return nil, sessionErr(err)
	}
	e, err := jobs.New(jobs.Config{
		REST: rest, Context: f.context, Namespace: f.namespace, Image: f.image, Parallel: o.parallel,
		Args: o.podArgs, History: history, Gate: o.gate, DryRun: o.dryRun, Log: newLogger(stderr, o.verbosity),
	})
	if err != nil {
		return nil, sessionErr(err)
	}
	fmt.Fprintf(stderr, "job: the scenarios run as Job %s in namespace %s on %s, %d pod(s) at a time, image %s\n", e.Name(), f.namespace, f.context, o.parallel, f.image)
	return e, nil
}
