package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework"
)

func newReportCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN_FOLDER",
		Short: "Write a run folder's report.html and junit.xml again from its result.json",
		Long: `Write report.html and junit.xml of a run folder from its result.json, linking
the dumps the folder holds: for a result copied from elsewhere, or after an
upgrade of faultline.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			b, err := os.ReadFile(filepath.Join(dir, artifacts.ResultFile))
			if err != nil {
				return usageErr("%v", err)
			}
			var res framework.Result
			if err := json.Unmarshal(b, &res); err != nil {
				return usageErr("%s: %v", filepath.Join(dir, artifacts.ResultFile), err)
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
			if err := run.WriteReports(&res, dumps); err != nil {
				return infraErr(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(dir, artifacts.ReportFile))
			return nil
		},
	}
}
