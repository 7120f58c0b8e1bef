package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/session"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
)

func newLabUpCommand() *cobra.Command {
	var (
		flags         labFlags
		clusters      int
		controlPlanes int
		workers       int
		cpMHC         bool
		noWorkerMHC   bool
		wait          time.Duration
		pool          int
	)
	cmd := &cobra.Command{
		Use: "up",
		Example: `  faultline lab up
  faultline lab up --clusters 3 --control-planes 3 --workers 2 --nodes containers`,
		Short: "Start the Cluster API lab and keep it running until Ctrl-C or 'faultline lab down'",
		Long: `Start the embedded Cluster API lab: a management cluster with the real Cluster
API and CAPV controllers, vcsim, and workload clusters run by the node
simulator. Prints the management and workload kubeconfigs and the vCenter
settings, so kubectl, govc and 'faultline run --provider capi' can use it from
another shell. Everything listens on 127.0.0.1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if clusters < 1 {
				return usageErr("--clusters %d: expected 1 or more", clusters)
			}
			if pool < 1 {
				return usageErr("--pool %d: expected 1 or more", pool)
			}
			if wait <= 0 {
				return usageErr("--wait %s: expected a positive duration, such as 10m", wait)
			}
			cfg, err := flags.config(newLogger(cmd.ErrOrStderr(), 0), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if _, err := lab.FindAssets(flags.assets); err != nil {
				return usageErr("%v", err)
			}
			dir, err := os.MkdirTemp("", "faultline-lab-")
			if err != nil {
				return infraErr(err)
			}
			defer os.RemoveAll(dir)

			ctx, stop := notifyContext(cmd.Context())
			defer stop()
			in := lab.Input{Assets: flags.assets, Dir: dir, Profile: cfg.Profile, Warn: cfg.Warn}
			for i := 1; i <= clusters; i++ {
				in.Clusters = append(in.Clusters, lab.ClusterSpec{
					Name: fmt.Sprintf("lab-%d", i),
					LabSpec: scenario.LabSpec{
						ControlPlanes: controlPlanes, Workers: workers, Nodes: flags.nodes, Release: flags.releaseFlag(),
						WorkerMHC: ptr.To(!noWorkerMHC), ControlPlaneMHC: ptr.To(cpMHC),
					},
				})
			}
			if err := in.Validate(); err != nil {
				return usageErr("%v", err)
			}
			cfg.Clusters, cfg.Dir, cfg.Wait = in.Clusters, dir, wait
			// The clusters served runs lease are simulated, of the
			// shape a scenario's spec.lab gives with these counts.
			stock := scenario.LabSpec{ControlPlanes: controlPlanes, Workers: workers}
			return runLabUp(ctx, cfg, served{stock: stock, n: pool}, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	flags.register(fs)
	fs.IntVar(&clusters, "clusters", 1, "number of workload clusters")
	fs.IntVar(&controlPlanes, "control-planes", 3, "control planes per cluster (odd)")
	fs.IntVar(&workers, "workers", 2, "workers per cluster")
	fs.BoolVar(&cpMHC, "control-plane-mhc", false, "add a MachineHealthCheck on the control plane")
	fs.BoolVar(&noWorkerMHC, "no-worker-mhc", false, "leave the workers without a MachineHealthCheck")
	fs.IntVar(&pool, "pool", 2, "clusters the lab keeps ready, of each shape scenarios run with --lab ask for, so a run does not wait for one")
	fs.DurationVar(&wait, "wait", session.DefaultLabWait, "how long the lab may take to have every Machine Running (many clusters on a small machine take longer)")
	return cmd
}

// served is what a lab up serves runs with: the shape of the clusters it
// keeps ready at first, and how many of each shape.
type served struct {
	stock scenario.LabSpec
	n     int
}

func runLabUp(ctx context.Context, cfg session.LabConfig, sv served, stdout, stderr io.Writer) error {
	started := time.Now()
	// Out shows the lab's start, and a stack's build on its first use.
	sess, err := session.Open(ctx, session.Config{Provider: session.ProviderLab, Lab: cfg, Out: stderr})
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return sessionErr(err)
	}
	defer func() {
		fmt.Fprintln(stderr, "lab: stopping")
		if err := sess.Close(context.Background()); err != nil {
			fmt.Fprintln(stderr, "faultline:", err)
		}
	}()
	l := sess.Lab
	paths, err := l.WriteKubeconfigs(ctx)
	if err != nil {
		return infraErr(err)
	}
	kc, err := clientcmd.LoadFromFile(paths[0])
	if err != nil {
		return infraErr(err)
	}
	vc := l.Sim().Config()
	fmt.Fprintf(stdout, "lab up in %s (%s time profile, release %s), folder %s\n", time.Since(started).Round(100*time.Millisecond), cfg.Profile.Name, l.Stack(), l.Dir())
	fmt.Fprintf(stdout, "management kubeconfig: %s (context %s)\n", paths[0], kc.CurrentContext)
	for i, c := range cfg.Clusters {
		fmt.Fprintf(stdout, "workload cluster %s (--cluster %s) kubeconfig: %s\n", c.Name, c.Key(), paths[i+1])
	}
	fmt.Fprintf(stdout, "export KUBECONFIG=%s\nexport GOVC_URL=%s\nexport GOVC_USERNAME=%s\nexport GOVC_PASSWORD=%s\nexport GOVC_TLS_CA_CERTS=%s\n",
		paths[0], vc.URL, vc.Username, vc.Password, vc.CAFile)
	host := l.Sim().URL().Host
	fmt.Fprintf(stdout, "with those exported, run a scenario on it as on a cluster of your own:\n  faultline run power-off-worker --provider capi --allow-context %s --cluster %s --allow-vcenter %s\n",
		kc.CurrentContext, cfg.Clusters[0].Key(), host)
	go writeClusterctlConfig(ctx, l, paths[0], stdout, stderr)
	servedEnd, err := serveRuns(ctx, sess, sv, stdout, cfg.Log)
	if err != nil {
		return infraErr(err)
	}
	name := filepath.Base(l.Dir())
	fmt.Fprintf(stdout, "or on a fresh cluster of its own, of which the lab keeps %d ready per shape (%s first):\n  faultline run power-off-worker --lab %s\n", sv.n, lab.SpecFor(lab.ClusterName, sv.stock).Shape(), name)
	fmt.Fprintf(stdout, "'faultline lab wait %s' returns once they are Running; Ctrl-C or 'faultline lab down %s' stops it.\n", name, name)
	<-ctx.Done()
	// Runs under way are interrupted, their faults undone, before the
	// lab stops.
	if err := <-servedEnd; err != nil {
		fmt.Fprintln(stderr, "faultline:", err)
	}
	return nil
}

// writeClusterctlConfig writes the lab's clusterctl configuration and says
// how clusterctl reads the lab with it. It runs beside the lab's start:
// the first time, each release's metadata comes through the module proxy.
func writeClusterctlConfig(ctx context.Context, l *lab.Lab, kubeconfig string, stdout, stderr io.Writer) {
	path, err := l.WriteClusterctlConfig(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(stderr, "faultline: clusterctl will not see the lab's releases: %v\n", err)
		}
		return
	}
	fmt.Fprintf(stdout, "clusterctl reads the lab's providers and the releases it serves, with no reach to GitHub:\n  clusterctl upgrade plan --config %s --kubeconfig %s\n", path, kubeconfig)
}

// serveRuns serves runs on sess's lab (run --lab) until ctx ends; the
// channel gets Serve's end. Once the clusters it keeps ready are Running
// it says so on stdout ("ready to serve").
func serveRuns(ctx context.Context, sess *session.Session, sv served, stdout io.Writer, log logr.Logger) (<-chan error, error) {
	began := time.Now()
	srv, err := session.NewServer(ctx, sess, sv.stock, sv.n, log)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := srv.WaitStocked(ctx); err != nil {
			if ctx.Err() == nil {
				log.Error(err, "the lab's pool")
			}
			return
		}
		fmt.Fprintf(stdout, "ready to serve: %d cluster(s) of %s Running, %s after the lab was up\n", sv.n, lab.SpecFor(lab.ClusterName, sv.stock).Shape(), time.Since(began).Round(100*time.Millisecond))
	}()
	ln, err := session.Listen(sess.Lab.Dir())
	if err != nil {
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	return served, nil
}

func newLabWaitCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:               "wait LAB",
		Example:           "  faultline lab wait faultline-lab-2170194503 --timeout 5m",
		ValidArgsFunction: completeLabs,
		Short:             "Wait until a running lab's pool is stocked: the next 'run --lab' finds a cluster Running",
		Long: `'lab up' prints its folder's name before the clusters it keeps ready for
runs are up; a run sent then waits for one. 'lab wait' returns once they are
all Running ('lab up' then prints "ready to serve"), or fails when the lab
stops first or --timeout passes: for a CI step that starts a lab, then runs
against it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageErr("--timeout %s: expected a positive duration", timeout)
			}
			ctx, cancel := context.WithTimeoutCause(cmd.Context(), timeout, fmt.Errorf("--timeout %s passed", timeout))
			defer cancel()
			if err := session.WaitReady(ctx, args[0]); err != nil {
				return sessionErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %s is ready to serve\n", args[0])
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait")
	return cmd
}

func newLabDownCommand() *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use: "down [LAB...]",
		Example: `  faultline lab down
  faultline lab down --stale
  faultline lab down faultline-lab-2170194503`,
		ValidArgsFunction: completeLabs,
		Short:             "List the labs, clean up after those whose process is gone (--stale), or stop the labs named",
		Long: `Every lab ('lab up''s, a run's, a suite's or a test's) records itself, while it
runs, in the user's lab records (faultline/labs in $XDG_CACHE_HOME or
~/.cache): its folder, and the pid and start time of the process that owns it.

With no argument, 'lab down' lists the labs recorded: those in use (by
which process) and those whose owner is gone (a run killed with SIGKILL, a
crashed test), and removes nothing. With --stale it removes what the labs
whose owner is gone left behind: leftover processes, the containers and
network of real nodes, what vcsim and envtest made in $TMPDIR for them
(datastores, certificates, the webhook serving key), the folder; and the
record files that are not lab records. Name a lab (its folder, or the
folder's name that 'lab up' prints) to stop it: its owner gets SIGTERM
(SIGKILL after 30 s), then what is left is removed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if stale && len(args) > 0 {
				return usageErr("--stale removes every lab whose owner is gone; name no lab with it (got %s)", strings.Join(args, ", "))
			}
			records, unreadable, err := lab.ReadRecords()
			if err != nil {
				return infraErr(err)
			}
			if len(args) == 0 {
				return labDownStale(cmd.OutOrStdout(), records, unreadable, stale)
			}
			var named []lab.Record
			for _, a := range args {
				i := slices.IndexFunc(records, func(r lab.Record) bool { return r.Name() == a || r.Dir == a })
				if i < 0 {
					names := make([]string, 0, len(records))
					for _, r := range records {
						names = append(names, r.Name())
					}
					return usageErr("no lab %q is recorded; recorded: %s", a, orNone(names))
				}
				named = append(named, records[i])
			}
			for _, r := range named {
				if err := labDown(r, cmd.OutOrStdout()); err != nil {
					return infraErr(err)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "remove what the labs whose owner is gone left behind (without it, they are only listed)")
	return cmd
}

// labDownStale lists the labs recorded and, when remove is set, removes
// those whose owner is gone and the record files that are not records.
func labDownStale(out io.Writer, records []lab.Record, unreadable []string, remove bool) error {
	if len(records)+len(unreadable) == 0 {
		fmt.Fprintln(out, "no lab is recorded")
	}
	gone := 0
	for _, r := range records {
		switch {
		case r.OwnerAlive():
			fmt.Fprintf(out, "lab %s is in use by pid %d (%s) since %s; 'faultline lab down %s' stops it\n", r.Name(), r.PID, r.Command, r.Created.Format(time.RFC3339), r.Name())
		case remove:
			if err := labDown(r, out); err != nil {
				return infraErr(err)
			}
		default:
			gone++
			fmt.Fprintf(out, "lab %s: its owner (pid %d, %s) is gone since %s; its folder %s is left\n", r.Name(), r.PID, r.Command, r.Created.Format(time.RFC3339), r.Dir)
		}
	}
	for _, path := range unreadable {
		if !remove {
			gone++
			fmt.Fprintf(out, "%s: not a lab record (torn or edited); it blocks nothing\n", path)
			continue
		}
		if err := lab.RemoveUnreadable(path); err != nil {
			return infraErr(err)
		}
		fmt.Fprintf(out, "removed %s: not a lab record\n", path)
	}
	if gone > 0 {
		fmt.Fprintf(out, "'faultline lab down --stale' removes the %d left behind\n", gone)
	}
	return nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// labDown stops the lab r records (lab.Down), saying what it does.
func labDown(r lab.Record, out io.Writer) error {
	return lab.Down(r, func(line string) { fmt.Fprintln(out, line) })
}
