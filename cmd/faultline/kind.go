package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/providers/kind"
)

func newKindCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "kind", Short: "Create and delete kind clusters to run scenarios on (--provider kind)"}
	cmd.AddCommand(newKindUpCommand(), newKindDownCommand())
	return cmd
}

func newKindUpCommand() *cobra.Command {
	var (
		o       kind.UpOptions
		verbose int
	)
	cmd := &cobra.Command{
		Use: "up",
		Example: `  faultline kind up --name night --control-planes 3 --workers 2
  faultline run kind-power-off-worker --provider kind --kind-cluster night`,
		Short: "Create a kind cluster with real control-plane components and kubelets",
		Long: `Create a kind cluster from a node image: by default the newest local
faultline.dev/kind-node image, which hack/kind-image.sh builds with no
registry. faultline sets up the pod network itself (a static CNI config per
node instead of kindnetd) and waits for every Node to be Ready. On a docker
host that cannot run --privileged containers it adapts kind's docker
commands (see README). The cluster's kubeconfig is printed, not merged into
~/.kube/config; 'faultline kind down' deletes everything it made.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ControlPlanes < 1 {
				return usageErr("--control-planes %d: expected 1 or more", o.ControlPlanes)
			}
			if o.Workers < 0 {
				return usageErr("--workers %d: expected 0 or more", o.Workers)
			}
			state, err := kind.DefaultState()
			if err != nil {
				return infraErr(err)
			}
			o.State = state
			o.Log = newLogger(cmd.ErrOrStderr(), verbose)
			ctx, stop := notifyContext(cmd.Context())
			defer stop()
			started := time.Now()
			_, rec, err := kind.Up(ctx, o)
			if err != nil {
				if rec != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "kind cluster %s failed; delete what is left of it with 'faultline kind down %s'\n", o.Name, o.Name)
				}
				return infraErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "kind cluster %s is ready (%s, %s)\nKUBECONFIG=%s\nrun scenarios with: faultline run SCENARIO --provider kind --kind-cluster %s\n",
				o.Name, time.Since(started).Round(time.Second), rec.Image, rec.Kubeconfig, o.Name)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Name, "name", "faultline", "the kind cluster's name")
	fs.IntVar(&o.ControlPlanes, "control-planes", 1, "control-plane nodes")
	fs.IntVar(&o.Workers, "workers", 1, "worker nodes")
	fs.StringVar(&o.Image, "image", "", "node image (default the newest local "+kind.ImageRepository+"; kindest/node:vX where a registry is reachable)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for every Node to be Ready")
	fs.BoolVar(&o.Retain, "retain", false, "keep the nodes of a cluster that failed to come up, for inspection")
	fs.IntVarP(&verbose, "v", "v", 0, "log verbosity (1+ shows kind's own steps)")
	return cmd
}

func newKindDownCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use: "down [NAME...]",
		Example: `  faultline kind down night
  faultline kind down`,
		ValidArgsFunction: completeKindClusters,
		Short:             "Delete kind clusters faultline created, and what it made for them",
		Long: `Delete the named kind clusters (default: every one faultline has a record of,
including ones a crash left half created): their containers and volumes, the
kind network when faultline created it and nothing else uses it, the docker
shim for sandboxed hosts and faultline's record. Clusters faultline did not
create are refused: delete them with kind.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			state, err := kind.DefaultState()
			if err != nil {
				return infraErr(err)
			}
			names := args
			if len(names) == 0 {
				if names, err = kind.Recorded(state); err != nil {
					return infraErr(err)
				}
			}
			if len(names) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no kind clusters created by faultline")
				return nil
			}
			log := newLogger(cmd.ErrOrStderr(), 0)
			for _, name := range names {
				if !kind.IsRecorded(state, name) {
					return usageErr("kind cluster %s: faultline did not create it (no record in %s); delete it with kind", name, state)
				}
				if err := kind.Down(cmd.Context(), state, name, nil, log); err != nil {
					return infraErr(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted kind cluster %s\n", name)
			}
			return nil
		},
	}
	return cmd
}

// kindFlags choose the kind cluster of --provider kind.
type kindFlags struct {
	cluster string
}

func (f *kindFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.cluster, "kind-cluster", "", "with --provider kind: the kind cluster's name (one 'faultline kind up' created, or an existing one named in --allow-context as kind-NAME)")
}
