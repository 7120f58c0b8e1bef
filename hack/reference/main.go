// Command reference prints the reference of every fault and probe a
// scenario may name, from engine.Vocabulary (capability, parameters,
// summary), each with an example from the first catalogue scenario that
// uses it. hack/verify.sh checks that docs/reference.md is what it prints:
//
//	go run ./hack/reference > docs/reference.md
package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/scenarios"
)

func main() {
	var b strings.Builder
	b.WriteString(`# Faults and probes

Every fault a scenario's ` + "`inject`" + ` step may name and every probe a condition
may read, with the provider capability it needs (a provider without it skips
the scenario, saying which), its parameters, what it does, and an example
from the catalogue. Generated from faultline's own vocabulary by
` + "`go run ./hack/reference > docs/reference.md`" + `; docs/scenario-format.md
explains the format around them.
`)
	section(&b, "Faults", engine.Vocabulary.Faults, "fault: ")
	section(&b, "Probes", engine.Vocabulary.Probes, "probe: ")
	labVCenter(&b)
	if _, err := os.Stdout.WriteString(b.String()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func section(b *strings.Builder, title string, words map[string]scenario.Word, key string) {
	fmt.Fprintf(b, "\n## %s\n", title)
	for _, name := range slices.Sorted(maps.Keys(words)) {
		w := words[name]
		fmt.Fprintf(b, "\n### `%s`\n\n", name)
		params := "none"
		if len(w.Args) > 0 {
			params = "`" + strings.Join(w.Args, "`, `") + "`"
		}
		fmt.Fprintf(b, "Capability `%s`; parameters: %s.\n\n%s.\n", w.Capability, params, upperFirst(w.Summary))
		if file, snippet := example(key + name); snippet != "" {
			fmt.Fprintf(b, "\nFrom `scenarios/%s.yaml`:\n\n```yaml\n%s```\n", file, snippet)
		} else {
			fmt.Fprintf(b, "\nNo catalogue scenario uses it yet; in a step:\n\n```yaml\n%s```\n", sketch(key, name, w.Args))
		}
	}
}

// labVCenter is the reference of the settings of the lab's vCenter: HA,
// placement and the realism each profile gives it.
func labVCenter(b *strings.Builder) {
	fmt.Fprintf(b, `
## The lab's vCenter

What a scenario's `+"`spec.lab`"+` sets of the lab's vCenter (docs/fidelity.md,
"Disasters bigger than one VM", says what each plays):

- `+"`ha: {enabled: true, restartAfter: DURATION}`"+`: vSphere HA for the cluster's VMs.
  A failed host's VMs (`+"`host.fail`"+`) still off are powered on on another host
  `+"`restartAfter`"+` after the failure (default %s), with HA's event. Off by default.
- `+"`placement: {controlPlanes: %s|%s|%s, controlPlaneHosts: N}`"+`: where the
  cluster's control-plane VMs go: each on a host of its own while there are
  hosts, all on one, or as DRS places any VM (the default); `+"`controlPlaneHosts`"+`
  keeps them on the first N hosts by name.
`, labconfig.DefaultHARestart, labconfig.PlacementSpread, labconfig.PlacementTogether, labconfig.PlacementAny)
	b.WriteString("\nWhat every lab vCenter does, by time profile (`--profile`):\n\n| profile | guest shutdown (the VM powers off this long after ShutdownGuest) | idle session ended after | guest reboot to Node Ready | VM task time (another task on the VM meanwhile: TaskInProgress; 0s: at once) |\n|---|---|---|---|---|\n")
	for _, name := range labconfig.ProfileNames() {
		p, _ := labconfig.ProfileNamed(name)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", name, p.GuestShutdown, p.SessionIdle, p.Reboot, p.VMTaskTime)
	}
}

// example is the first catalogue scenario with a line "KEY" (the fault or
// probe), and the YAML item around that line: from the list item it is in
// to the next line as little indented, at most 12 lines.
func example(key string) (string, string) {
	for _, name := range scenarios.Names() {
		data, err := scenarios.Read(name)
		if err != nil {
			continue
		}
		lines := strings.Split(string(data), "\n")
		for i, l := range lines {
			trimmed := strings.TrimLeft(l, " -{")
			if !strings.HasPrefix(trimmed, key) && !strings.Contains(l, "{"+key) && !strings.Contains(l, " "+key+",") && !strings.HasSuffix(l, " "+key) {
				continue
			}
			start := i
			for start > 0 && !strings.HasPrefix(strings.TrimLeft(lines[start], " "), "- ") {
				start--
			}
			indent := len(lines[start]) - len(strings.TrimLeft(lines[start], " "))
			end := i + 1
			for end < len(lines) && end-start < 12 {
				l := lines[end]
				if strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " ")) <= indent {
					break
				}
				end++
			}
			var out strings.Builder
			for _, l := range lines[start:end] {
				if len(l) >= indent {
					l = l[indent:]
				}
				out.WriteString(l + "\n")
			}
			return name, out.String()
		}
	}
	return "", ""
}

// sketch is how a step names the fault or probe, its parameters left to
// fill in.
func sketch(key, name string, args []string) string {
	var params []string
	for _, a := range args {
		params = append(params, a+": ...")
	}
	if key == "fault: " {
		s := "- name: " + strings.ReplaceAll(name, ".", "-") + "\n  inject:\n    fault: " + name + "\n    target: victim\n"
		if len(params) > 0 {
			s += "    params: {" + strings.Join(params, ", ") + "}\n"
		}
		return s
	}
	s := "when: {probe: " + name + ", target: victim"
	if len(params) > 0 {
		s += ", args: {" + strings.Join(params, ", ") + "}"
	}
	return s + "}\n"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
