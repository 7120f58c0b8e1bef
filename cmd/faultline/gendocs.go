package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newGenDocsCommand writes the CLI reference, a Markdown page per command
// from the commands' own help (cobra's doc generator), into a folder:
// docs/cli, which hack/verify.sh checks is current. Hidden: it is for
// faultline's own docs.
func newGenDocsCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs FOLDER",
		Short:  "Write the CLI reference as Markdown, a page per command",
		Args:   cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			return doc.GenMarkdownTree(root, args[0])
		},
	}
}
