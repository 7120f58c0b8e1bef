package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/providers/lab"
)

func newLabReleasesCommand() *cobra.Command {
	var build, output string
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
  faultline lab releases -o json
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
			if err := checkOutput(output, "text", outputJSON); err != nil {
				return err
			}
			rows, err := stackRows()
			if err != nil {
				return infraErr(err)
			}
			if output == outputJSON {
				b, err := json.MarshalIndent(rows, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			}
			return printStacks(out, rows)
		},
	}
	cmd.Flags().StringVar(&build, "build", "", "build this stack's managers now (a stack's name or CAPI_VERSION+CAPV_VERSION)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// stackRow is one stack as lab releases shows it.
type stackRow struct {
	Name       string `json:"name"`
	ClusterAPI string `json:"clusterAPI"`
	CAPV       string `json:"capv"`
	Default    bool   `json:"default"`
	// InProcess: faultline runs its controllers in its own process; the
	// others run as the release's own manager binaries.
	InProcess bool `json:"inProcess"`
	// Untested says why the pair is one CAPV does not test.
	Untested string `json:"untested,omitempty"`
	Built    bool   `json:"built"`
	// Dir is where its binaries are (or go on first use); Problem, when
	// set, why those there are not as built.
	Dir     string `json:"dir,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// stackRows are the lab's stacks, the default first.
func stackRows() ([]stackRow, error) {
	var rows []stackRow
	for i, s := range lab.Stacks() {
		r := stackRow{Name: s.Name, ClusterAPI: s.ClusterAPI, CAPV: s.CAPV, Default: i == 0, InProcess: s.Compiled, Untested: s.Untested}
		r.Dir, _ = lab.StackDir(s)
		ok, err := lab.StackBuilt(s)
		if err != nil {
			return nil, err
		}
		r.Built = ok
		if ok {
			if err := lab.VerifyStack(s); err != nil {
				r.Problem = err.Error()
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// printStacks prints rows as a table, then what the table cannot hold.
func printStacks(out io.Writer, rows []stackRow) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "STACK\tCLUSTER API\tCAPV\tRUNS\tBUILT")
	for _, r := range rows {
		name, runs, built := r.Name, "as its managers' processes", "yes"
		if r.Default {
			name += " (default)"
		}
		if r.InProcess {
			runs = "in faultline's process"
		}
		if r.Untested != "" {
			name += " (untested pair)"
		}
		switch {
		case !r.Built:
			built = "no (on first use, or --build " + r.Name + "; into " + r.Dir + ")"
		case r.Problem != "":
			built = "not as built (" + r.Problem + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, r.ClusterAPI, r.CAPV, runs, built)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Untested != "" {
			fmt.Fprintf(out, "%s: %s\n", r.Name, r.Untested)
		}
	}
	_, err := fmt.Fprintln(out, "Another patch of a stack's Cluster API runs as an exact pair: --release CAPI_VERSION+CAPV_VERSION (v1.13.4+v1.16.1), or the Cluster API version alone.")
	return err
}
