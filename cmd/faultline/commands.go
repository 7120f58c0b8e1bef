package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultline-dev/faultline/session"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/vsphere"
	"github.com/faultline-dev/faultline/scenarios/selection"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print faultline's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			v := version
			if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
				v = info.Main.Version
			}
			fmt.Fprintln(cmd.OutOrStdout(), "faultline", v)
		},
	}
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
		Use:   "validate SCENARIO...",
		Short: "Check scenario files without running them",
		Long: `Check scenario files, the scenario files of folders, or catalogue names. Every
problem of a file is reported in one pass, as file:line:col: field: message,
with the nearest known name for a misspelt field, fault, probe, target or
phase; -o json gives the same as a list of files with their problems.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageErr("--output %q: expected text or json", output)
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
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(all); err != nil {
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
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func newListCommand() *cobra.Command {
	var output, selector string
	cmd := &cobra.Command{
		Use:   "list [SCENARIO...]",
		Short: "List scenarios with their labels: the catalogue, or files and folders",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			type entry struct {
				Name        string            `json:"name"`
				Description string            `json:"description"`
				Labels      map[string]string `json:"labels"`
				Requires    []string          `json:"requires"`
			}
			scs, err := selectScenarios(args, selector, nil)
			if err != nil {
				return err
			}
			var entries []entry
			for _, sc := range scs {
				e := entry{Name: sc.Metadata.Name, Description: sc.Metadata.Description, Labels: sc.Metadata.Labels}
				for _, c := range sc.Spec.Requires {
					e.Requires = append(e.Requires, string(c))
				}
				entries = append(entries, e)
			}
			switch output {
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(entries)
			case "text":
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tLABELS\tREQUIRES\tDESCRIPTION")
				for _, e := range entries {
					var labels []string
					for k, v := range e.Labels {
						labels = append(labels, k+"="+v)
					}
					sort.Strings(labels)
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, strings.Join(labels, ","), strings.Join(e.Requires, ","), firstSentence(e.Description))
				}
				return tw.Flush()
			}
			return usageErr("--output %q: expected text or json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "list only the scenarios whose metadata.labels match this label selector (e.g. 'seed-002,tier=core')")
	return cmd
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

func newRecoverCommand() *cobra.Command {
	var vc vcenterFlags
	var timeout time.Duration
	var contexts []string
	var keyFile, accept string
	var force []string
	cmd := &cobra.Command{
		Use:   "recover [JOURNAL...]",
		Short: "Undo the faults a crashed or killed run left in place",
		Long: `Replay the pending undo entries of journals: each argument is a journal
file, or a folder searched at any depth for journal.jsonl files. With no
argument, every journal.jsonl under $ARTIFACTS (or _artifacts) is read.

A journal is a file anyone who can write the artifacts folder can edit, so
recover trusts nothing in it that would send credentials. Every entry must
carry the seal (an HMAC) faultline gave it with the journal key, a file kept
outside the artifacts folder ($FAULTLINE_JOURNAL_KEY, or journal.key in the
user's faultline configuration folder, mode 0600). The vCenter or context a
fault went to must be allowed again (--allow-vcenter, --allow-context, or
their environment variables; kind clusters faultline created need none), and
TLS is verified against the identity recorded when the fault was injected:
vCenter's certificate thumbprint, the management cluster's server and CA. A
journal that fails any of these is refused (exit 2, naming the file and
line) before anything is undone or any login is tried. To recover on another
host, pass the key of the host that wrote the journals with --journal-key;
--vcenter-url overrides the URL a journal records.

vCenter credentials come from the environment (GOVC_USERNAME, GOVC_PASSWORD)
or the flags; the journal only records where the vCenter is.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Every flag is checked before anything is looked for.
			if timeout <= 0 {
				return usageErr("--timeout %s: expected a positive duration such as 10m", timeout)
			}
			if accept != "" {
				if err := vsphere.CheckThumbprint(accept); err != nil {
					return usageErr("--accept-thumbprint: %v", err)
				}
			}
			in := engine.RecoverInput{Force: force}
			if keyFile != "" {
				var err error
				if in.Key, err = engine.LoadJournalKey(keyFile, false); err != nil {
					return usageErr("--journal-key: %v", err)
				}
				in.Heads = engine.JournalHeads(keyFile)
			}
			roots := args
			if len(roots) == 0 {
				roots = []string{artifacts.Root()}
				if _, err := os.Stat(roots[0]); errors.Is(err, fs.ErrNotExist) {
					fmt.Fprintf(cmd.OutOrStdout(), "nothing to recover: %s does not exist\n", roots[0])
					return nil
				}
			}
			var err error
			if in.Journals, err = engine.FindJournals(roots); err != nil {
				return usageErr("find journals: %v", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "recover: %d journal(s) under %s\n", len(in.Journals), strings.Join(roots, ", "))
			ctx, stop := notifyContext(cmd.Context())
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			vcfg, err := vc.sessionConfig(logr.Discard())
			if err != nil {
				return err
			}
			conns := &session.Reconnector{VCenter: vcfg, URL: vc.url, Contexts: contexts, AcceptThumbprint: accept}
			return recoverJournals(ctx, cmd, in, conns)
		},
	}
	vc.register(cmd.Flags(), true)
	vc.registerGuest(cmd.Flags())
	cmd.Flags().StringSliceVar(&contexts, "allow-context", nil, "kubeconfig context (kind-NAME for a kind cluster faultline did not create) whose faults may be undone; repeatable (also $"+session.EnvAllowedContexts+")")
	cmd.Flags().StringVar(&keyFile, "journal-key", "", "the key the journals were sealed with (default $"+engine.EnvJournalKey+", or journal.key in the user's faultline configuration folder); another host's, to recover its journals here")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	cmd.Flags().StringVar(&accept, "accept-thumbprint", "", "after vCenter's certificate was renewed: the new certificate's thumbprint, exactly as the refusal shows it, to trust instead of the one the journal recorded")
	cmd.Flags().StringSliceVar(&force, "force-entry", nil, "FILE:LINE of a pending fault to undo although its journal's lines are not where faultline wrote them (a journal moved or copied since); of that journal only the entries named are undone; repeatable")
	return cmd
}

func recoverJournals(ctx context.Context, cmd *cobra.Command, in engine.RecoverInput, conns *session.Reconnector) error {
	out := cmd.OutOrStdout()
	// One login per vCenter, however many faults the journals hold.
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := conns.Close(cctx); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "faultline:", err)
		}
	}()
	in.Check, in.Reconnect = conns.Check, conns.Reconnect
	in.Note = func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), "recover: NOTE:", s) }
	in.Report = func(r engine.Recovered) {
		switch {
		case r.Err != nil:
			fmt.Fprintf(out, "%s: %s %s: FAILED: %v\n", r.Journal, r.Entry.FaultID, r.Entry.Kind, r.Err)
		case r.Why != "":
			fmt.Fprintf(out, "%s: %s %s: %s (%s): %s\n", r.Journal, r.Entry.FaultID, r.Entry.Kind, r.Result, r.Entry.Undo.Action, r.Why)
		default:
			fmt.Fprintf(out, "%s: %s %s: %s (%s)\n", r.Journal, r.Entry.FaultID, r.Entry.Kind, r.Result, r.Entry.Undo.Action)
		}
	}
	sum, err := engine.Recover(ctx, in)
	switch {
	case errors.Is(err, engine.ErrBadJournal), errors.Is(err, engine.ErrUntrustedJournal):
		return usageErr("%v", err)
	case err != nil:
		return infraErr(err)
	case sum.Pending == 0:
		fmt.Fprintf(out, "nothing to recover: no pending faults in %d journal(s)\n", len(in.Journals))
	case sum.Failed > 0:
		return infraErr(fmt.Errorf("%d of %d pending faults could not be undone; they stay pending", sum.Failed, sum.Pending))
	}
	return nil
}

func newLabCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "lab", Short: "Run parts of the embedded lab on their own"}
	var listen, envFile string
	vcsim := &cobra.Command{
		Use:   "vcsim",
		Short: "Serve the embedded vCenter simulator on loopback until interrupted",
		Long: `Serve govmomi's vCenter simulator with TLS on 127.0.0.1, for trying the vsphere
provider or govc. Prints (and with --env-file writes) the GOVC_* settings that
reach it, including its CA file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sim, err := lab.StartVCSim(lab.VCSimInput{Listen: listen})
			if err != nil {
				return usageErr("%v", err)
			}
			defer sim.Close()
			cfg := sim.Config()
			env := fmt.Sprintf("GOVC_URL=%s\nGOVC_USERNAME=%s\nGOVC_PASSWORD=%s\nGOVC_TLS_CA_CERTS=%s\n", cfg.URL, cfg.Username, cfg.Password, cfg.CAFile)
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
	cmd.AddCommand(vcsim, newLabUpCommand(), newLabDownCommand())
	return cmd
}
