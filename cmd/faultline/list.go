package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// listEntry is one scenario in list -o json|yaml.
type listEntry struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Labels      map[string]string `json:"labels"`
	Requires    []string          `json:"requires"`
}

func newListCommand() *cobra.Command {
	var output, selector string
	cmd := &cobra.Command{
		Use:               "list [SCENARIO...]",
		ValidArgsFunction: completeScenarios,
		Short:             "List scenarios: the catalogue, or files and folders",
		Long: `List scenarios with their tier, the incident reports (seeds) they reproduce
and the first sentence of their description, cut to the terminal's width
(120 columns in a pipe); -o wide adds every label and the capabilities each requires, -o json|yaml
gives all of it. 'faultline describe NAME' shows one in full.`,
		Example: `  faultline list
  faultline list -l seed-002
  faultline list -l 'tier=core,!incident' -o wide`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", "wide", outputJSON, outputYAML); err != nil {
				return err
			}
			scs, err := selectScenarios(args, selector, nil)
			if err != nil {
				return err
			}
			var entries []listEntry
			for _, sc := range scs {
				e := listEntry{Name: sc.Metadata.Name, Description: sc.Metadata.Description, Labels: sc.Metadata.Labels}
				for _, c := range sc.Spec.Requires {
					e.Requires = append(e.Requires, string(c))
				}
				entries = append(entries, e)
			}
			if structured(output) {
				return printDoc(cmd.OutOrStdout(), output, entries)
			}
			// Cut to the terminal, or to 120 columns in a pipe or a log;
			// -o wide cuts nothing.
			width := 0
			if output == "text" {
				width = 120
				if tty, now := terminal(cmd.OutOrStdout()); tty {
					width = now()
				}
			}
			return writeList(cmd.OutOrStdout(), entries, output == "wide", width)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, wide, json or yaml")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "list only the scenarios whose metadata.labels match this label selector (e.g. 'seed-002,tier=core')")
	return cmd
}

// writeList writes a table of entries; each line is cut to width columns
// when width is set (a terminal's).
func writeList(w io.Writer, entries []listEntry, wide bool, width int) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "NAME\tTIER\tSEEDS\tLABELS\tREQUIRES\tDESCRIPTION")
	} else {
		fmt.Fprintln(tw, "NAME\tTIER\tSEEDS\tDESCRIPTION")
	}
	for _, e := range entries {
		var seeds, labels []string
		for k, v := range e.Labels {
			labels = append(labels, k+"="+v)
			if id, ok := strings.CutPrefix(k, "seed-"); ok && v == "true" {
				seeds = append(seeds, id)
			}
		}
		slices.Sort(labels)
		slices.Sort(seeds)
		tier := e.Labels["tier"]
		if tier == "" {
			tier = "-"
		}
		if len(seeds) == 0 {
			seeds = []string{"-"}
		}
		if wide {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, tier, strings.Join(seeds, ","), strings.Join(labels, ","), strings.Join(e.Requires, ","), firstSentence(e.Description))
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, tier, strings.Join(seeds, ","), firstSentence(e.Description))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if width > 0 {
			line = fit(strings.TrimSuffix(line, "\n"), width) + "\n"
		}
		if line == "\n" {
			continue
		}
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
	}
	return nil
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
