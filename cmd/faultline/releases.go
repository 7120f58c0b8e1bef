package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/providers/lab"
)

func newLabReleasesCommand() *cobra.Command {
	var build string
	cmd := &cobra.Command{
		Use:   "releases",
		Short: "List the Cluster API and CAPV stacks the lab runs, and whether each is built",
		Long: `List the stacks a lab can run (--release on run, lab up; spec.lab.release in a
scenario; E2E_RELEASE in the suites): a Cluster API release and the CAPV
release built against it. The first is the one faultline links and runs in
its own process; every other runs as that release's own manager binaries,
built from their module sources through the Go module proxy on first use
(minutes) and kept in the cache of built releases ($FAULTLINE_RELEASES, or
faultline/releases in the user's cache folder).

--build NAME builds a stack now, showing its progress.`,
		Example: `  faultline lab releases
  faultline lab releases --build v1.12
  faultline run power-off-worker --release v1.12`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if build != "" {
				stack, err := lab.ParseRelease(build).Resolve()
				if err != nil {
					return usageErr("--build %q: %v", build, err)
				}
				ctx, stop := notifyContext(cmd.Context())
				defer stop()
				dir, err := lab.BuildStack(ctx, stack, cmd.ErrOrStderr())
				if err != nil {
					return infraErr(err)
				}
				fmt.Fprintf(out, "stack %s is built in %s\n", stack, dir)
				return nil
			}
			w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "STACK\tCLUSTER API\tCAPV\tRUNS\tBUILT")
			for i, s := range lab.Stacks() {
				name, runs, built := s.Name, "as its managers' processes", "yes"
				if i == 0 {
					name += " (default)"
				}
				if s.Compiled {
					runs = "in faultline's process"
				}
				if s.Untested != "" {
					name += " (untested pair)"
				}
				dir, _ := lab.StackDir(s)
				if ok, err := lab.StackBuilt(s); err != nil {
					return infraErr(err)
				} else if !ok {
					built = "no (on first use, or --build " + s.Name + "; into " + dir + ")"
				} else if err := lab.VerifyStack(s); err != nil {
					built = "not as built (" + err.Error() + ")"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, s.ClusterAPI, s.CAPV, runs, built)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			for _, s := range lab.Stacks() {
				if s.Untested != "" {
					fmt.Fprintf(out, "%s: %s\n", s.Name, s.Untested)
				}
			}
			fmt.Fprintln(out, "Another patch of a stack's Cluster API runs as an exact pair: --release CAPI_VERSION+CAPV_VERSION (v1.13.4+v1.16.1), or the Cluster API version alone.")
			return nil
		},
	}
	cmd.Flags().StringVar(&build, "build", "", "build this stack's managers now (a stack's name or CAPI_VERSION+CAPV_VERSION)")
	return cmd
}
