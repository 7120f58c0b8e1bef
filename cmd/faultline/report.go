package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/internal/regularfile"
)

func newReportCommand() *cobra.Command {
	var history string
	cmd := &cobra.Command{
		Use: "report RUN_FOLDER",
		Example: `  faultline report _artifacts/power-off-worker-20261127-101500
  faultline report _artifacts/power-off-worker-20261127-101500 --history nightly-history`,
		Short: "Write a run folder's report.html and junit.xml again from its result.json",
		Long: `Write report.html and junit.xml of a run folder from its result.json, linking
the dumps the folder holds: for a result copied from elsewhere, or after an
upgrade of faultline. With --history (or $FAULTLINE_HISTORY) each phase is
shown against the runs of that folder that finished before this one.`,
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
			if history == "" {
				history = os.Getenv(artifacts.EnvHistory)
			}
			var stats map[string]artifacts.PhaseStats
			if history != "" {
				h, err := artifacts.OpenHistory(history)
				if err != nil {
					return usageErr("--history: %v", err)
				}
				h.Warn = warnTo(cmd.ErrOrStderr())
				if stats, err = h.StatsBefore(artifacts.HistoryName(res), res.Provider, res.Profile, res.FinishedAt); err != nil {
					return infraErr(err)
				}
			}
			if err := run.WriteReports(res, dumps, stats); err != nil {
				return infraErr(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(dir, artifacts.ReportFile))
			return nil
		},
	}
	cmd.Flags().StringVar(&history, "history", "", "folder of past results to show each phase against (default $"+artifacts.EnvHistory+")")
	return cmd
}

func newHistoryCommand() *cobra.Command {
	var dir, provider, profile, html, output string
	cmd := &cobra.Command{
		Use:   "history [SCENARIO...]",
		Short: "Show scenarios' past phase times and their trend, as the regression gate (run --gate) sees them",
		Long: `Show each phase of a scenario (every scenario of the history folder when none
is named) over its past runs on one provider and profile: P50 and P95 of the
passing runs, the gate's limit, the last passing run, how many failed runs
were left out, and the runs as a line, ▁ to █ for each passing run's time and
✗ for each failed one. --html writes the same as one page with a plot per
phase: a week of nightly runs on one page.`,
		Example: `  faultline history --history nightly-history
  faultline history power-off-worker --history nightly-history --html history.html
  FAULTLINE_HISTORY=nightly-history faultline history delete-cp-vm --provider lab --profile compressed`,
		ValidArgsFunction: completeScenarios,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", outputJSON); err != nil {
				return err
			}
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
			h.Warn = warnTo(cmd.ErrOrStderr())
			if len(args) == 0 {
				if args, err = h.Scenarios(); err != nil {
					return infraErr(err)
				}
			}
			var trends []artifacts.ScenarioTrend
			for _, sc := range args {
				stats, err := h.Stats(sc, provider, profile)
				if err != nil {
					return infraErr(err)
				}
				trends = append(trends, artifacts.ScenarioTrend{Scenario: sc, Phases: stats})
			}
			if output == outputJSON {
				if err := writeHistoryJSON(cmd.OutOrStdout(), trends, provider, profile); err != nil {
					return err
				}
			} else if err := writeHistoryText(cmd.OutOrStdout(), trends, provider, profile); err != nil {
				return err
			}
			if html == "" {
				return nil
			}
			f, err := regularfile.Create(html, 0o644)
			if err != nil {
				return usageErr("--html: %v", err)
			}
			title := fmt.Sprintf("%s on %s %s", dir, provider, profile)
			if err := errors.Join(artifacts.WriteHistoryPage(f, title, trends), f.Close()); err != nil {
				return infraErr(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), html)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, "history", "", "folder of past results (default $"+artifacts.EnvHistory+")")
	fs.StringVar(&provider, "provider", "lab", "provider the runs were on")
	fs.StringVar(&profile, "profile", "compressed", "the lab's time profile of the runs (empty elsewhere)")
	fs.StringVar(&html, "html", "", "also write the trends as one HTML page to this file")
	fs.StringVarP(&output, "output", "o", "text", "output format: text or json (each phase's statistics and its runs)")
	return cmd
}

// writeHistoryJSON prints the trends as one JSON object: the provider and
// profile they are of, and each scenario's phases, sorted by name, with
// their statistics and runs.
func writeHistoryJSON(w io.Writer, trends []artifacts.ScenarioTrend, provider, profile string) error {
	type scenarioJSON struct {
		Scenario string                 `json:"scenario"`
		Phases   []artifacts.PhaseStats `json:"phases"`
	}
	out := struct {
		Provider  string         `json:"provider"`
		Profile   string         `json:"profile,omitempty"`
		Scenarios []scenarioJSON `json:"scenarios"`
	}{Provider: provider, Profile: profile, Scenarios: []scenarioJSON{}}
	for _, tr := range trends {
		s := scenarioJSON{Scenario: tr.Scenario, Phases: []artifacts.PhaseStats{}}
		for _, name := range slices.Sorted(maps.Keys(tr.Phases)) {
			s.Phases = append(s.Phases, tr.Phases[name])
		}
		out.Scenarios = append(out.Scenarios, s)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeHistoryText prints each scenario's phases with their statistics and
// trend.
func writeHistoryText(w io.Writer, trends []artifacts.ScenarioTrend, provider, profile string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, t := range trends {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s on %s %s: %d phases with history\n", t.Scenario, provider, profile, len(t.Phases))
		fmt.Fprintln(tw, "phase\truns\tfailed\tP50\tP95\tlimit\tlast\ttrend (oldest first)")
		for _, n := range slices.Sorted(maps.Keys(t.Phases)) {
			s := t.Phases[n]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1fs\t%.1fs\t%.1fs\t%.1fs\t%s\n", n, s.Runs, s.Failed, s.P50, s.P95, s.Limit(), s.Last, artifacts.Sparkline(s))
		}
	}
	return tw.Flush()
}
