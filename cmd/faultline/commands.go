package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/scenarios/selection"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// versionInfo is what version -o json|yaml prints.
type versionInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Compiled is the Cluster API and CAPV release linked in; the lab
	// runs the others as their own managers (faultline lab releases).
	Compiled struct {
		ClusterAPI string `json:"clusterAPI"`
		CAPV       string `json:"capv"`
	} `json:"compiled"`
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print faultline's version",
		Example: `  faultline version
  faultline version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "text", outputJSON, outputYAML); err != nil {
				return err
			}
			if !structured(output) {
				fmt.Fprintln(cmd.OutOrStdout(), "faultline", versionString())
				return nil
			}
			v := versionInfo{Version: versionString(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			for _, st := range lab.Stacks() {
				if st.Compiled {
					v.Compiled.ClusterAPI, v.Compiled.CAPV = st.ClusterAPI, st.CAPV
					break
				}
			}
			return printDoc(cmd.OutOrStdout(), output, v)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

// versionString is the version set at build time, else the module's.
func versionString() string {
	if info, ok := debug.ReadBuildInfo(); ok && version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return version
}

// validated is one file's outcome in validate -o json.
type validated struct {
	File     string        `json:"file"`
	OK       bool          `json:"ok"`
	Scenario string        `json:"scenario,omitempty"`
	Steps    int           `json:"steps,omitempty"`
	Problems []fileProblem `json:"problems,omitempty"`
}

// fileProblem is one problem of a file: where, which field, what.
type fileProblem struct {
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func newValidateCommand() *cobra.Command {
	var sets []string
	var output string
	cmd := &cobra.Command{
		Use: "validate SCENARIO...",
		Example: `  faultline validate my-scenario.yaml
  faultline validate scenarios/ -o json
  faultline validate power-off-worker --set budget.notready=1m`,
		ValidArgsFunction: completeScenarios,
		Short:             "Check scenario files without running them",
		Long: `Check scenario files, the scenario files of folders, or catalogue names. Every
problem of a file is reported in one pass, as file:line:col: field: message,
with the nearest known name for a misspelt field, fault, probe, target or
phase; -o json gives the same as a list of files with their problems.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", outputJSON, outputYAML); err != nil {
				return err
			}
			overrides, err := parseSets(sets)
			if err != nil {
				return err
			}
			sources, err := selection.Sources(args)
			if err != nil {
				return usageErr("%v", err)
			}
			bad := 0
			var all []validated
			for _, src := range sources {
				v := validated{File: src.String()}
				sc, err := src.Load(overrides)
				if err != nil {
					bad++
					var ve *scenario.ValidationError
					if errors.As(err, &ve) {
						for _, fe := range ve.Errors {
							v.Problems = append(v.Problems, fileProblem{Line: fe.Pos.Line, Column: fe.Pos.Column, Field: fe.Field, Message: fe.Msg})
						}
					} else {
						v.Problems = append(v.Problems, fileProblem{Message: err.Error()})
					}
					if output == "text" {
						fmt.Fprintln(cmd.ErrOrStderr(), err)
					}
				} else {
					v.OK, v.Scenario, v.Steps = true, sc.Metadata.Name, len(sc.Spec.Steps)
					if output == "text" {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (scenario %s, %d steps)\n", sc.Source, sc.Metadata.Name, len(sc.Spec.Steps))
					}
				}
				all = append(all, v)
			}
			if structured(output) {
				if err := printDoc(cmd.OutOrStdout(), output, all); err != nil {
					return err
				}
			}
			if bad > 0 {
				return exitCode(exitUsage)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a scenario parameter, name=value; repeatable")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

func newLabCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "lab", Short: "Run parts of the embedded lab on their own"}
	var listen, envFile string
	vcsim := &cobra.Command{
		Use:     "vcsim",
		Example: `  faultline lab vcsim --listen 127.0.0.1:8989`,
		Short:   "Serve the embedded vCenter simulator on loopback until interrupted",
		Long: `Serve govmomi's vCenter simulator with TLS on 127.0.0.1, for trying the vsphere
provider or govc. Prints (and with --env-file writes) the GOVC_* settings that
reach it, including its CA file, as export lines a shell sources
(. FILE), as lab up prints its own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sim, err := lab.StartVCSim(lab.VCSimInput{Listen: listen})
			if err != nil {
				return usageErr("%v", err)
			}
			defer sim.Close()
			cfg := sim.Config()
			env := fmt.Sprintf("export GOVC_URL=%s\nexport GOVC_USERNAME=%s\nexport GOVC_PASSWORD=%s\nexport GOVC_TLS_CA_CERTS=%s\n", cfg.URL, cfg.Username, cfg.Password, cfg.CAFile)
			if envFile != "" {
				tmp := envFile + ".tmp"
				if err := os.WriteFile(tmp, []byte(env), 0o600); err != nil {
					return infraErr(err)
				}
				if err := os.Rename(tmp, envFile); err != nil {
					return infraErr(err)
				}
			}
			fmt.Fprint(cmd.OutOrStdout(), env)
			ctx, stop := notifyContext(cmd.Context())
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	vcsim.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address to listen on")
	vcsim.Flags().StringVar(&envFile, "env-file", "", "also write the GOVC_* settings to this file")
	cmd.AddCommand(vcsim, newLabUpCommand(), newLabWaitCommand(), newLabDownCommand(), newLabReleasesCommand())
	return cmd
}
