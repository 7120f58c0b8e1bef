package main

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/scenarios"
	"github.com/faultline-dev/faultline/session"
)

// completeScenarios offers the catalogue's names that start with what was
// typed, and lets the shell offer files and folders beside them.
func completeScenarios(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, n := range scenarios.Names() {
		if strings.HasPrefix(n, typed) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveDefault
}

// fixed completes a flag from a fixed list and nothing else.
func fixed(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}

// completeContexts offers the contexts of $KUBECONFIG or ~/.kube/config
// (the --kubeconfig given, when it was typed first).
func completeContexts(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f := cmd.Flags().Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		rules.ExplicitPath = f.Value.String()
	}
	cfg, err := rules.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for name := range cfg.Contexts {
		out = append(out, name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSets offers, for --set, NAME= for each parameter of the
// scenarios named before it (catalogue names or files), described by its
// default.
func completeSets(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	seen := map[string]bool{}
	var out []string
	for _, a := range args {
		data, err := scenarios.Read(a)
		if err != nil {
			if data, err = os.ReadFile(a); err != nil {
				continue
			}
		}
		var s struct {
			Spec struct {
				Parameters map[string]string `json:"parameters"`
			} `json:"spec"`
		}
		if yaml.Unmarshal(data, &s) != nil {
			continue
		}
		for name, def := range s.Spec.Parameters {
			if !seen[name] {
				seen[name] = true
				out = append(out, name+"=\tdefault "+def)
			}
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// completeKindClusters offers the kind clusters faultline created.
func completeKindClusters(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	state, err := kind.DefaultState()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, err := kind.Recorded(state)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeLabs offers the labs 'faultline lab up' keeps running.
func completeLabs(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	recs, err := lab.Records()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Name())
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// registerCompletions completes cmd's arguments and the flags it has
// among those faultline completes.
func registerCompletions(cmd *cobra.Command) {
	var releases []string
	for _, st := range lab.Stacks() {
		releases = append(releases, st.Name)
	}
	flags := map[string]cobra.CompletionFunc{
		"provider":     fixed(session.Providers()...),
		"profile":      fixed("compressed", "real"),
		"nodes":        fixed("simulated", "containers"),
		"release":      fixed(releases...),
		"context":      completeContexts,
		"on-cluster":   completeContexts,
		"kind-cluster": completeKindClusters,
		"from":         completeScenarios,
		"set":          completeSets,
	}
	if f := cmd.Flags().Lookup("output"); f != nil {
		flags["output"] = fixed(outputFormats(f.Usage)...)
	}
	for name, fn := range flags {
		if cmd.Flags().Lookup(name) != nil {
			// Registered once per command: an error means it already is.
			if err := cmd.RegisterFlagCompletionFunc(name, fn); err != nil {
				continue
			}
		}
	}
	for _, sub := range cmd.Commands() {
		registerCompletions(sub)
	}
}

// outputFormats reads the formats an --output flag's usage lists
// ("output format: text, json or yaml").
func outputFormats(usage string) []string {
	_, list, ok := strings.Cut(usage, ": ")
	if !ok {
		return nil
	}
	if i := strings.Index(list, " ("); i >= 0 {
		list = list[:i]
	}
	var out []string
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		if f != "or" {
			out = append(out, f)
		}
	}
	return out
}
