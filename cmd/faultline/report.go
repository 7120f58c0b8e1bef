package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/artifacts"
)

func newReportCommand() *cobra.Command {
	return &cobra.Command{
		Use: "report RUN_FOLDER",
		Example: `  faultline report _artifacts/power-off-worker-20261127-101500
  faultline report _artifacts/power-off-worker-20261127-101500 --history nightly-history`,
		Short: "Write a run folder's report.html and junit.xml again from its result.json",
		Long: `Write report.html and junit.xml of a run folder from its result.json, linking
the dumps the folder holds: for a result copied from elsewhere, or after an
upgrade of faultline.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			res, err := artifacts.ReadResult(dir)
			if err != nil {
				return usageErr("%v", err)
			}
			dumps, err := filepath.Glob(filepath.Join(dir, artifacts.DumpDir, "*.yaml"))
			if err != nil {
				return infraErr(err)
			}
			sort.Strings(dumps)
			for i, d := range dumps {
				dumps[i] = artifacts.DumpDir + "/" + filepath.Base(d)
			}
			run, err := artifacts.Open(dir)
			if err != nil {
				return infraErr(err)
			}
			defer run.Close()
			if err := run.WriteReports(res, dumps, nil); err != nil {
				return infraErr(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(dir, artifacts.ReportFile))
			return nil
		},
	}
}

func newHistoryCommand() *cobra.Command {
	var dir, provider, profile string
	cmd := &cobra.Command{
		Use: "history SCENARIO",
		Example: `  faultline history power-off-worker --history nightly-history
  FAULTLINE_HISTORY=nightly-history faultline history delete-cp-vm --provider lab --profile compressed`,
		Short: "Show a scenario's past phase times, as the regression gate (run --gate) sees them",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				dir = os.Getenv(artifacts.EnvHistory)
			}
			if dir == "" {
				return usageErr("--history (or $%s): the folder of past results is required", artifacts.EnvHistory)
			}
			h, err := artifacts.OpenHistory(dir)
			if err != nil {
				return usageErr("--history: %v", err)
			}
			stats, err := h.Stats(args[0], provider, profile)
			if err != nil {
				return infraErr(err)
			}
			names := make([]string, 0, len(stats))
			for n := range stats {
				names = append(names, n)
			}
			sort.Strings(names)
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "%s on %s %s: %d phases with history\n", args[0], provider, profile, len(names))
			fmt.Fprintln(w, "phase\truns\tP50\tP95\tlimit\tlast")
			for _, n := range names {
				s := stats[n]
				fmt.Fprintf(w, "%s\t%d\t%.1fs\t%.1fs\t%.1fs\t%.1fs\n", n, s.Runs, s.P50, s.P95, s.Limit(), s.Last)
			}
			return w.Flush()
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, "history", "", "folder of past results (default $"+artifacts.EnvHistory+")")
	fs.StringVar(&provider, "provider", "lab", "provider the runs were on")
	fs.StringVar(&profile, "profile", "compressed", "the lab's time profile of the runs (empty elsewhere)")
	return cmd
}
