package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/framework/scenario"
)

func newDescribeCommand() *cobra.Command {
	var output string
	var sets []string
	cmd := &cobra.Command{
		Use:   "describe SCENARIO",
		Short: "Show what a scenario does: targets, faults, phases with budgets, parameters",
		Long: `Show one scenario, a catalogue name or a file: what it does, the incident
reports (seeds) it reproduces, what it requires of a provider, the lab it
starts, its parameters with their defaults (--set shows them changed), its
targets and workloads, and each step: the faults it injects and the phases
it waits for with their budgets. -o yaml prints the file as it is, -o json
the same as JSON.`,
		Example: `  faultline describe power-off-worker
  faultline describe power-off-worker --set budget.unhealthy=7m
  faultline describe ./my-scenario.yaml -o yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeScenarios,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", outputJSON, outputYAML); err != nil {
				return err
			}
			overrides, err := parseSets(sets)
			if err != nil {
				return err
			}
			scs, err := selectScenarios(args, "", overrides)
			if err != nil {
				return err
			}
			if len(scs) != 1 {
				return usageErr("%s holds %d scenarios; describe takes one (a file or a catalogue name)", args[0], len(scs))
			}
			sc := scs[0]
			switch output {
			case outputYAML:
				_, err := cmd.OutOrStdout().Write(sc.Text)
				return err
			case outputJSON:
				j, err := yaml.YAMLToJSON(sc.Text)
				if err != nil {
					return err
				}
				// Indented, as the other -o json outputs are.
				var out bytes.Buffer
				if err := json.Indent(&out, j, "", "  "); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out.Bytes())
				return err
			}
			return describe(cmd.OutOrStdout(), sc, overrides)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml (the file itself)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a scenario parameter, name=value, to see the budgets it gives; repeatable")
	return cmd
}

// describe writes sc for people; sets are the --set values it was read
// with.
func describe(w io.Writer, sc *scenario.Scenario, sets map[string]string) error {
	var b strings.Builder
	line := func(k, v string) { fmt.Fprintf(&b, "%-12s %s\n", k, v) }
	line("Name:", sc.Metadata.Name)
	line("Source:", sc.Source)
	if d := sc.Metadata.Description; d != "" {
		b.WriteString("Description:\n")
		for _, l := range wrap(d, 76) {
			b.WriteString("  " + l + "\n")
		}
	}
	var seeds []string
	for _, r := range sc.Metadata.References {
		seeds = append(seeds, r.Kind+" "+r.ID)
	}
	if len(seeds) > 0 {
		line("References:", strings.Join(seeds, ", ")+" (the incident reports it reproduces)")
	}
	line("Labels:", joinMap(sc.Metadata.Labels, "="))
	var reqs []string
	for _, c := range sc.Spec.Requires {
		reqs = append(reqs, string(c))
	}
	line("Requires:", orDash(strings.Join(reqs, ", ")))
	if l := sc.Spec.Lab; l != nil {
		lab := fmt.Sprintf("%d control plane(s), %d worker(s)", l.ControlPlanes, l.Workers)
		if l.Nodes != "" {
			lab += ", nodes " + l.Nodes
		}
		line("Lab:", lab)
	}
	line("Timeout:", sc.Spec.Timeout.Duration.String())
	if len(sc.Spec.Parameters) > 0 {
		b.WriteString("Parameters:  (--set NAME=VALUE)\n")
		for _, k := range slices.Sorted(maps.Keys(sc.Spec.Parameters)) {
			v := sc.Spec.Parameters[k]
			if set, ok := sets[k]; ok && set != v {
				v = set + " (--set; default " + v + ")"
			}
			fmt.Fprintf(&b, "  %-28s %s\n", k, v)
		}
	}
	b.WriteString("Targets:\n")
	for _, t := range sc.Spec.Targets {
		fmt.Fprintf(&b, "  %-14s %s\n", t.Name, describeTarget(t))
	}
	if len(sc.Spec.Workloads) > 0 {
		b.WriteString("Workloads:\n")
		for _, wl := range sc.Spec.Workloads {
			fmt.Fprintf(&b, "  %-14s %d replicas in %s, in the workload cluster of %s\n", wl.Name, wl.ReplicasOrDefault(), wl.NamespaceOrDefault(), wl.Target)
		}
	}
	b.WriteString("Steps:\n")
	for i, st := range sc.Spec.Steps {
		fmt.Fprintf(&b, "  %d. %s (%s)\n", i+1, st.Name, st.StepKind())
		for _, l := range describeStep(st) {
			b.WriteString("       " + l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func describeTarget(t scenario.Target) string {
	var sel []string
	for k, v := range map[string]string{"role": t.Select.Role, "cluster": t.Select.Cluster, "machineDeployment": t.Select.MachineDeployment,
		"controlPlane": t.Select.ControlPlane, "nodeName": t.Select.NodeName, "vm": t.Select.VM, "uuid": t.Select.UUID, "providerID": t.Select.ProviderID} {
		if v != "" {
			sel = append(sel, k+"="+v)
		}
	}
	for k, v := range t.Select.NodeLabels {
		sel = append(sel, "node label "+k+"="+v)
	}
	slices.Sort(sel)
	s := "every match of " + orDash(strings.Join(sel, ", "))
	switch {
	case t.Count > 0:
		s = fmt.Sprintf("%d of %s", t.Count, strings.TrimPrefix(s, "every match of "))
	case t.Percent > 0:
		s = fmt.Sprintf("%d%% of %s", t.Percent, strings.TrimPrefix(s, "every match of "))
	}
	if t.Random != nil {
		s += ", picked at random"
	}
	if len(t.Exclude) > 0 {
		s += ", not those of " + strings.Join(t.Exclude, ", ")
	}
	return s
}

// describeStep is what a step does, a line each.
func describeStep(st scenario.Step) []string {
	var out []string
	switch {
	case st.Setup != nil, st.Teardown != nil:
		b := st.Setup
		if b == nil {
			b = st.Teardown
		}
		for _, c := range b.Require {
			out = append(out, "requires "+describeCondition(c))
		}
	case st.Inject != nil:
		s := "injects " + st.Inject.Fault
		if st.Inject.Target != "" {
			s += " on " + st.Inject.Target
		}
		if p := joinMap(st.Inject.Params, "="); p != "-" && st.Inject.Params["manifest"] == "" {
			s += " (" + p + ")"
		}
		out = append(out, s)
	case st.Observe != nil:
		for _, p := range st.Observe.Phases {
			from := string(p.From)
			if from == "" {
				from = "inject"
			}
			budget := "no budget"
			if p.Within.Duration > 0 {
				budget = "within " + p.Within.Duration.String()
			}
			out = append(out, fmt.Sprintf("phase %s: %s, %s of %s", p.Name, describeCondition(p.When), budget, from))
		}
		for _, g := range st.Observe.While {
			out = append(out, fmt.Sprintf("while %s holds: %s", g.Name, describeCondition(g.Condition)))
		}
	case st.Assert != nil:
		out = append(out, describeAssert(*st.Assert))
	case st.Undo != nil:
		if st.Undo.All {
			out = append(out, "undoes every fault so far")
		} else {
			out = append(out, "undoes "+st.Undo.Fault)
		}
	}
	return out
}

func describeAssert(a scenario.Assert) string {
	switch {
	case a.Within != nil:
		return fmt.Sprintf("phase %s within %s of %s", a.Within.Phase, a.Within.Budget.Duration, a.Within.From)
	case a.Never != nil:
		return fmt.Sprintf("never for %s: %s", a.Never.For.Duration, describeCondition(a.Never.Condition))
	case a.Consistently != nil:
		return fmt.Sprintf("consistently for %s: %s", a.Consistently.For.Duration, describeCondition(a.Consistently.Condition))
	case a.Count != nil:
		s := fmt.Sprintf("count over %s of %s", a.Count.For.Duration, describeCondition(a.Count.Condition))
		if a.Count.AtLeast != nil {
			s += fmt.Sprintf(", at least %d", *a.Count.AtLeast)
		}
		if a.Count.AtMost != nil {
			s += fmt.Sprintf(", at most %d", *a.Count.AtMost)
		}
		return s
	case a.Disruption != nil:
		d := a.Disruption
		s := fmt.Sprintf("workload %s's %s down", d.Workload, scenario.MeasureOf(map[string]string{"of": d.Of}))
		if d.AtMost != nil {
			s += fmt.Sprintf(" at most %s in all", d.AtMost.Duration)
		}
		if d.Longest != nil {
			s += fmt.Sprintf(", at most %s at a time", d.Longest.Duration)
		}
		return s
	}
	return ""
}

func describeCondition(c scenario.Condition) string {
	s := c.Probe
	if c.Target != "" {
		s += " on " + c.Target
		if c.Any {
			s += " (any)"
		}
	}
	if len(c.Args) > 0 {
		s += " (" + joinMap(c.Args, "=") + ")"
	}
	return s
}

// joinMap is m's k=v pairs in key order, "-" when empty.
func joinMap(m map[string]string, sep string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+sep+m[k])
	}
	return orDash(strings.Join(out, ", "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// wrap breaks s into lines of at most width columns at spaces.
func wrap(s string, width int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		if cur != "" && len([]rune(cur))+1+len([]rune(word)) > width {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += word
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
