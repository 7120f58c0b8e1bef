package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/artifacts/scorecard"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/session"
)

type compareOptions struct {
	run          runOptions
	base, target string
	runs         int
	tolerancePct float64
	toleranceAbs time.Duration
	out          string
	output       string
	// baseRelSet and targetRelSet: the flags were given.
	baseRelSet, targetRelSet bool
}

func newCompareCommand() *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare (BASE_DIR TARGET_DIR | --base-release R1 --target-release R2 SCENARIO...)",
		Short: "Scorecard of the same scenarios on two releases: per phase, the medians, spreads and verdicts side by side, regressions flagged",
		Long: `Compare the same scenarios on two sides, phase by phase: the median and spread
of each phase's time on each side, the verdicts, and a flag on every difference
beyond the tolerance (by default the median +20% and +5s) or any verdict change.
A slower phase, a phase missed only on the target side and a worse verdict are
regressions: the exit code is then 1.

With two folders, it reads the result.json files under each (runs of
'faultline run --artifacts', of the suites, or of an earlier compare). With
--base-release and --target-release it first runs the scenarios --runs times on
a lab of each release, into ARTIFACTS/base and ARTIFACTS/target.

The scorecard is printed (text, or -o json) and written as scorecard.json,
scorecard.html (both distributions drawn per phase) and junit.xml (a regression
is a failing test case) into --out, by default the artifacts folder of a run.`,
		Example: `  faultline compare --base-release v1.12 --target-release v1.13 --runs 3 power-off-worker delete-cp-vm
  faultline compare nightly/v1.12 nightly/v1.13 --out scorecard`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.baseRelSet, o.targetRelSet = cmd.Flags().Changed("base-release"), cmd.Flags().Changed("target-release")
			return o.compare(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.base, "base-release", "", "run the scenarios on a lab of this release first (the one running now)")
	fs.StringVar(&o.target, "target-release", "", "and on a lab of this release (the one to upgrade to)")
	fs.IntVar(&o.runs, "runs", scorecard.MinRuns, "with --base-release: how many times each scenario runs on each side (the rank test that tells a difference from noise needs 4 at least)")
	fs.Float64Var(&o.tolerancePct, "tolerance", 100*scorecard.DefaultTolerance.Ratio, "percent a phase's median may grow before it is flagged (and --tolerance-abs too)")
	fs.DurationVar(&o.toleranceAbs, "tolerance-abs", scorecard.DefaultTolerance.Abs, "time a phase's median may grow before it is flagged (and --tolerance too)")
	fs.StringVar(&o.out, "out", "", "folder for scorecard.json, scorecard.html and junit.xml (default the artifacts folder with --base-release; none with two folders)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	fs.StringVarP(&o.run.selector, "selector", "l", "", "with --base-release: run the catalogue's scenarios whose metadata.labels match")
	fs.StringVar(&o.run.artifacts, "artifacts", "", "with --base-release: folder of both sides' runs (default $ARTIFACTS or _artifacts, then compare-<timestamp>)")
	fs.StringArrayVar(&o.run.sets, "set", nil, "with --base-release: override a scenario parameter, name=value; repeatable")
	o.run.lab.registerShape(fs)
	return cmd
}

func (o *compareOptions) compare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := checkOutput(o.output, "text", outputJSON, outputYAML); err != nil {
		return err
	}
	if o.tolerancePct < 0 || o.toleranceAbs < 0 {
		return usageErr("--tolerance %v%% and --tolerance-abs %s: expected neither negative", o.tolerancePct, o.toleranceAbs)
	}
	tol := scorecard.Tolerance{Ratio: o.tolerancePct / 100, Abs: o.toleranceAbs}
	var sc *scorecard.Scorecard
	switch {
	case o.baseRelSet != o.targetRelSet:
		return usageErr("--base-release and --target-release go together: the two releases to compare")
	case o.baseRelSet:
		if o.runs < 1 {
			return usageErr("--runs %d: expected 1 or more", o.runs)
		}
		if len(args) == 0 && o.run.selector == "" {
			return usageErr("compare needs scenarios to run: files, folders, names from 'faultline list', or -l SELECTOR")
		}
		root := o.run.artifacts
		if root == "" {
			root = artifacts.RunDir("compare", time.Now())
		}
		base, err := o.side(ctx, args, o.base, filepath.Join(root, "base"), stderr)
		if err != nil {
			return err
		}
		target, err := o.side(ctx, args, o.target, filepath.Join(root, "target"), stderr)
		if err != nil {
			return err
		}
		sc = scorecard.Compare(o.base, base, o.target, target, tol)
		if o.out == "" {
			o.out = root
		}
	default:
		if len(args) != 2 {
			return usageErr("compare needs two folders of results (BASE_DIR TARGET_DIR), or --base-release and --target-release with scenarios to run")
		}
		base, target, err := scorecard.ReadDirs(args[0], args[1])
		if err != nil {
			return usageErr("%v", err)
		}
		sc = scorecard.Compare(args[0], base, args[1], target, tol)
	}
	return o.print(sc, stdout, stderr)
}

// side runs the scenarios o.runs times on a lab of release, into dir, and
// returns their results. A failed scenario is a result, not an error; an
// interrupted run stops the comparison.
func (o *compareOptions) side(ctx context.Context, args []string, release, dir string, stderr io.Writer) ([]*engine.Result, error) {
	r := o.run
	r.provider, r.output, r.artifacts, r.lab.release = session.ProviderLab, "text", dir, release
	var scs []*scenario.Scenario
	sets, err := parseSets(r.sets)
	if err != nil {
		return nil, err
	}
	for range o.runs {
		round, err := selectScenarios(args, r.selector, sets)
		if err != nil {
			return nil, err
		}
		scs = append(scs, round...)
	}
	if err := r.adjust(scs, true); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "compare: %d runs on release %s into %s\n", len(scs), release, dir)
	ctx, abort, stop := notifySignals(ctx, stderr)
	defer stop()
	r.abort = abort
	err = r.runMany(ctx, scs, sets, nil, stderr, stderr, newLogger(stderr, r.verbosity))
	if ctx.Err() != nil {
		return nil, &exitError{code: exitInfra, err: fmt.Errorf("interrupted: the comparison was not finished (runs so far in %s)", dir)}
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitUsage {
		return nil, err
	}
	return scorecard.Read(dir)
}

func (o *compareOptions) print(sc *scorecard.Scorecard, stdout, stderr io.Writer) error {
	var err error
	if structured(o.output) {
		err = printDoc(stdout, o.output, sc)
	} else {
		err = sc.WriteText(stdout)
	}
	if err != nil {
		return infraErr(err)
	}
	if o.out != "" {
		if err := sc.WriteFiles(o.out); err != nil {
			return infraErr(err)
		}
		fmt.Fprintf(stderr, "scorecard: %s\n", filepath.Join(o.out, "scorecard.html"))
	}
	if sc.Regressions > 0 {
		return exitCode(exitFail)
	}
	return nil
}
