package scorecard

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultline-dev/faultline/artifacts"
)

// sideName is a side's label with its release.
func (s Side) sideName() string {
	name := s.Label
	if r := s.Release; r != nil && r.Stack != s.Label {
		name += " (release " + r.Stack + ")"
	}
	if r := s.Release; r != nil && r.Untested != "" {
		name += fmt.Sprintf(" [Cluster API %s, CAPV %s: %s]", r.ClusterAPI, r.CAPV, r.Untested)
	} else if r != nil {
		name += fmt.Sprintf(" [Cluster API %s, CAPV %s]", r.ClusterAPI, r.CAPV)
	}
	return name
}

// WriteText writes the scorecard for people: a table per scenario, each
// flag beside its phase, and the regressions at the end.
func (sc *Scorecard) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "scorecard: base %s, %d runs; target %s, %d runs; a difference is flagged beyond %s where a one-sided rank test gives p < %.2f (%d runs a side at least), or when a verdict changes\n",
		sc.Base.sideName(), sc.Base.Runs, sc.Target.sideName(), sc.Target.Runs, sc.Tolerance, Alpha, MinRuns)
	for _, s := range sc.Scenarios {
		fmt.Fprintf(w, "\n%s: base %s; target %s\n", s.Name, orNone(verdictList(s.BaseVerdicts)), orNone(verdictList(s.TargetVerdicts)))
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  phase\tbase median [min-max]\ttarget median [min-max]\t")
		for _, p := range s.Phases {
			note := flagText(p.Flag)
			if p.Undecided != "" {
				note = "undecided: " + p.Undecided
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, p.Base, p.Target, note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, f := range s.Flags {
			if f.Phase == "" {
				fmt.Fprintf(w, "  %s\n", flagText(&f))
			}
		}
	}
	if sc.Undecided > 0 {
		fmt.Fprintf(w, "\n%d phase(s) moved beyond %s with too few runs to tell from noise: run at least %d a side (compare --runs %d)\n", sc.Undecided, sc.Tolerance, MinRuns, MinRuns)
	}
	if sc.Regressions == 0 {
		_, err := fmt.Fprintf(w, "\nno regression: no phase slower beyond %s that the rank test tells from noise, no verdict worse\n", sc.Tolerance)
		return err
	}
	fmt.Fprintf(w, "\n%d regression(s):\n", sc.Regressions)
	for _, s := range sc.Scenarios {
		for _, f := range s.Flags {
			if f.Regression {
				fmt.Fprintf(w, "  %s: %s\n", where(s.Name, f), f.What)
			}
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "not run"
	}
	return s
}

func where(scenario string, f Flag) string {
	if f.Phase == "" {
		return scenario
	}
	return scenario + "/" + f.Phase
}

func flagText(f *Flag) string {
	switch {
	case f == nil:
		return ""
	case f.Regression:
		return "REGRESSION " + f.What
	}
	return "changed: " + f.What
}

// String is "1.9s [1.8s-2.1s]", with the misses.
func (s Stats) String() string {
	var out string
	if len(s.Samples) > 0 {
		out = fmt.Sprintf("%s [%s-%s]", round(s.Median), round(s.Min), round(s.Max))
	}
	if s.Missed > 0 {
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("missed %d", s.Missed)
	}
	if out == "" {
		return "-"
	}
	return out
}

// WriteJSON writes the scorecard as JSON (durations in nanoseconds, as
// Go writes them; the text and HTML forms round them).
func (sc *Scorecard) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sc)
}

// JUnit is the scorecard as a JUnit suite: a case per scenario's verdicts
// and per phase, a regression a failure, so that a CI view shows which
// phase got slower.
func (sc *Scorecard) JUnit() artifacts.JUnitSuites {
	suite := artifacts.JUnitSuite{
		Name: "scorecard " + sc.Base.Label + " vs " + sc.Target.Label,
		Properties: []artifacts.JUnitProperty{
			{Name: "base", Value: sc.Base.sideName()}, {Name: "target", Value: sc.Target.sideName()},
			{Name: "tolerance", Value: sc.Tolerance.String()},
		},
	}
	add := func(name, classname, out string, f *Flag) {
		c := artifacts.JUnitCase{Name: name, Classname: classname, Output: out}
		if f != nil && f.Regression {
			c.Failure = &artifacts.JUnitFailure{Message: f.What, Text: f.What}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
	}
	for _, s := range sc.Scenarios {
		var vf *Flag
		for i, f := range s.Flags {
			if f.Phase == "" {
				vf = &s.Flags[i]
			}
		}
		add(s.Name+": verdicts", s.Name, fmt.Sprintf("base %s; target %s", orNone(verdictList(s.BaseVerdicts)), orNone(verdictList(s.TargetVerdicts))), vf)
		for _, p := range s.Phases {
			add(s.Name+"/"+p.Name, s.Name, fmt.Sprintf("base %s; target %s", p.Base, p.Target), p.Flag)
		}
	}
	return artifacts.JUnitSuites{Suites: []artifacts.JUnitSuite{suite}}
}

// seconds is d in seconds, for the HTML's axes.
func seconds(d time.Duration) float64 { return d.Seconds() }

// verdictsOf is a side's verdict counts, by verdict.
func verdictsOf(m map[string]int) string { return strings.ToUpper(orNone(verdictList(m))) }
