package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/session/runs"
)

// report prints the results (with summary, a line each after them),
// writes the Markdown summary (with history, each phase against it), and
// turns them into the exit code: the worst verdict's, an infrastructure
// error's when err is set.
func (o *runOptions) report(stdout io.Writer, results []*engine.Result, dirs []string, summary bool, history *artifacts.History, err error) error {
	if serr := o.writeSummary(results, history); serr != nil {
		err = errors.Join(err, serr)
	}
	if structured(o.output) {
		var doc any = results
		if len(results) == 1 {
			doc = results[0]
		}
		if err := printDoc(stdout, o.output, doc); err != nil {
			return infraErr(err)
		}
	} else {
		for i, res := range results {
			printResult(stdout, res)
			if dirs[i] != "" {
				fmt.Fprintf(stdout, "artifacts: %s\n", dirs[i])
			}
		}
		if summary {
			fmt.Fprintf(stdout, "\n%d of %d scenarios passed:\n", artifacts.Passed(results), len(results))
			for _, res := range results {
				fmt.Fprintln(stdout, runs.SummaryLine(res))
			}
		}
	}
	if err != nil {
		return infraErr(err)
	}
	code, skipped := 0, false
	for _, res := range results {
		if c := verdictExit(res.Verdict); c == exitInfra || (c == exitFail && code == 0) {
			code = c
		}
		skipped = skipped || res.Verdict == engine.Skipped
	}
	if code == exitPass && skipped {
		code = o.skippedExit
	}
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// writable checks, before anything starts, that the run's outputs can be
// written, by writing: the --artifacts folder (made if need be) takes a
// file, the --summary file opens for writing (or its folder takes a file).
// A run that injected and then could not keep its evidence would be found
// out too late. --history is made by OpenHistory before the first inject.
func writable(artifactsDir, summary string) error {
	probe := func(dir string) error {
		f, err := os.CreateTemp(dir, ".faultline-writable-*")
		if err != nil {
			return err
		}
		return errors.Join(f.Close(), os.Remove(f.Name()))
	}
	if artifactsDir != "" {
		if err := os.MkdirAll(artifactsDir, 0o750); err != nil {
			return usageErr("--artifacts %s: %v", artifactsDir, err)
		}
		if err := probe(artifactsDir); err != nil {
			return usageErr("--artifacts %s: cannot be written: %v", artifactsDir, err)
		}
	}
	if summary == "" {
		return nil
	}
	fi, err := os.Stat(summary)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return usageErr("--summary %s: not a regular file", summary)
	case err == nil:
		var f *os.File
		if f, err = os.OpenFile(summary, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			err = f.Close()
		}
	case errors.Is(err, fs.ErrNotExist):
		err = probe(filepath.Dir(summary))
	}
	if err != nil {
		return usageErr("--summary %s: cannot be written: %v", summary, err)
	}
	return nil
}

// writeSummary writes the Markdown summary to --summary and appends it to
// $GITHUB_STEP_SUMMARY, where asked.
func (o *runOptions) writeSummary(results []*engine.Result, history *artifacts.History) error {
	md, err := artifacts.MarkdownSummary(results, history)
	if err != nil {
		return fmt.Errorf("--summary: %w", err)
	}
	if o.summary != "" {
		if err := os.WriteFile(o.summary, []byte(md), 0o644); err != nil {
			return fmt.Errorf("--summary: %w", err)
		}
	}
	if p := os.Getenv(artifacts.EnvStepSummary); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("$%s: %w", artifacts.EnvStepSummary, err)
		}
		_, werr := f.WriteString(md)
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("$%s: %w", artifacts.EnvStepSummary, err)
		}
	}
	return nil
}

// scenarioFolder is the folder, under the run's, of the next scenario
// named name: its name, and from its second run on (the same scenario
// listed twice, or two files with one name) name-2, name-3 and so on, so
// that no run's artifacts overwrite another's. seen counts the names.
func scenarioFolder(seen map[string]int, name string) string {
	seen[name]++
	if n := seen[name]; n > 1 {
		return fmt.Sprintf("%s-%d", name, n)
	}
	return name
}

// writeIndex writes root's index.html: a row per scenario, linking each
// to its report.
func writeIndex(root string, results []*engine.Result, dirs []string) error {
	var entries []artifacts.IndexEntry
	for i, res := range results {
		e := artifacts.IndexEntry{Result: res}
		if dirs[i] != "" {
			rel, err := filepath.Rel(root, dirs[i])
			if err != nil {
				return err
			}
			e.Folder = rel
		}
		entries = append(entries, e)
	}
	f, err := regularfile.Create(filepath.Join(root, artifacts.IndexFile), 0o644)
	if err != nil {
		return err
	}
	return errors.Join(artifacts.WriteIndex(f, entries), f.Close())
}
