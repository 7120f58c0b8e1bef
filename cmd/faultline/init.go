package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/scenarios/selection"
)

// starterScenario is what faultline init writes: a scenario that runs on
// the embedded lab as it is, every part commented.
const starterScenario = `# yaml-language-server: $schema=%[2]s
# A faultline scenario: a fault, what the cluster must do about it, and
# how fast. Run it on the embedded lab with 'faultline run %[1]s.yaml',
# check it with 'faultline validate %[1]s.yaml'. Your editor completes and
# checks every field from the schema named on the first line; 'faultline
# list' shows the catalogue to borrow from.
apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata:
  name: %[1]s
  description: >-
    A worker VM is powered off through the vSphere API; its Node goes
    NotReady, the MachineHealthCheck replaces the Machine, and a new worker
    runs within the budgets.
  # Labels select scenarios: faultline run -l team=me,tier=core
  labels:
    destructive: "true"
spec:
  # The provider capabilities the steps use; a provider that lacks one
  # skips the run, saying which.
  requires: [VMPower, ClusterAPI]
  # The lab cluster to start when it runs on the embedded lab (ignored on
  # your own clusters). nodes: containers makes every VM a real node.
  lab:
    controlPlanes: 1
    workers: 2
  # Named defaults, referenced as ${name} below; override with --set.
  parameters:
    budget.notready: 30s
    budget.replacement: 2m
  timeout: 5m
  pollInterval: 500ms
  # What the faults act on: one worker Machine, picked at random (the seed
  # is in the result; --seed fixes it).
  targets:
    - name: victim
      select:
        role: worker
      count: 1
      random: {}
  steps:
    # Setup: the cluster must be whole before anything is touched.
    - name: baseline
      setup:
        require:
          - probe: replicas-restored
            target: victim
    # Inject: journaled before it is applied, undone at the end.
    - name: power-off
      inject:
        fault: vm.power-off
        target: victim
    # Observe: each phase must be reached within its budget, counted from
    # the injection (or from another phase with from:).
    - name: remediation
      observe:
        phases:
          - name: node-not-ready
            when: {probe: node-not-ready, target: victim}
            within: ${budget.notready}
          - name: machine-deleted
            when: {probe: machine-deleted, target: victim}
            within: ${budget.replacement}
          - name: replacement-running
            when: {probe: replacement-running, target: victim}
            within: ${budget.replacement}
`

// schemaURL is where a scenario file's editor finds the JSON Schema.
const schemaURL = "https://raw.githubusercontent.com/faultline-dev/faultline/main/docs/scenario.schema.json"

func newInitCommand() *cobra.Command {
	var force bool
	var from string
	cmd := &cobra.Command{
		Use:   "init NAME",
		Short: "Write NAME.yaml, a commented scenario to start from",
		Long: `Write NAME.yaml in the current folder: a scenario that runs on the embedded lab
as it is (a worker powered off and replaced), every part commented, or with
--from a copy of a catalogue scenario renamed NAME. NAME is the scenario's
metadata.name: lower case letters, digits and '-'.`,
		Example: `  faultline init my-power-off
  faultline init my-quorum-loss --from kill-etcd-quorum`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
				return usageErr("scenario name %q: %s", name, strings.Join(errs, "; "))
			}
			body := fmt.Sprintf(starterScenario, name, schemaURL)
			if from != "" {
				var err error
				if body, err = fromCatalogue(from, name); err != nil {
					return err
				}
			}
			// What init writes must load: a broken template is a bug here,
			// not the user's.
			if _, err := scenario.Parse(name+".yaml", []byte(body), nil, engine.Vocabulary); err != nil {
				return fmt.Errorf("the starter scenario does not validate: %w", err)
			}
			path := name + ".yaml"
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flags, 0o644)
			if errors.Is(err, os.ErrExist) {
				return usageErr("%s exists: pass --force to overwrite it", path)
			}
			if err != nil {
				return err
			}
			if _, err := f.WriteString(body); err != nil {
				return errors.Join(err, f.Close())
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: run it with 'faultline run %s'\n", path, path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite NAME.yaml if it exists")
	cmd.Flags().StringVar(&from, "from", "", "start from this catalogue scenario ('faultline list' names them) instead of the starter")
	return cmd
}

// catalogueName is the metadata.name line of a catalogue scenario.
var catalogueName = regexp.MustCompile(`(?m)^  name: (\S+)$`)

// fromCatalogue is the catalogue scenario from, renamed name, with the
// schema line pointing where an editor outside this repository finds it.
func fromCatalogue(from, name string) (string, error) {
	data, err := selection.ReadCatalogue(from)
	if err != nil {
		return "", usageErr("--from: %v", err)
	}
	body := string(data)
	m := catalogueName.FindStringSubmatchIndex(body)
	if m == nil || body[m[2]:m[3]] != from {
		return "", fmt.Errorf("catalogue scenario %s: no metadata.name line to rename", from)
	}
	body = body[:m[2]] + name + body[m[3]:]
	return strings.Replace(body, "$schema=../docs/scenario.schema.json", "$schema="+schemaURL, 1), nil
}
