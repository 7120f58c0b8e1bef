package artifacts

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
)

// JUnitFile is a run's JUnit report.
const JUnitFile = "junit.xml"

// JUnitSuites is a JUnit XML document, in the form CI systems read
// (Jenkins, GitLab, GitHub's test reporters).
type JUnitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is one suite; Time is in seconds.
type JUnitSuite struct {
	Name string `xml:"name,attr"`
	// Timestamp is when the run started (UTC, as JUnit's schema has it)
	// and Hostname the machine it ran on.
	Timestamp string `xml:"timestamp,attr,omitempty"`
	Hostname  string `xml:"hostname,attr,omitempty"`
	Tests     int    `xml:"tests,attr"`
	Failures  int    `xml:"failures,attr"`
	Errors    int    `xml:"errors,attr"`
	Skipped   int    `xml:"skipped,attr"`
	Time      string `xml:"time,attr,omitempty"`
	// Properties say what ran: the lab's profile and release.
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	Cases      []JUnitCase     `xml:"testcase"`
	// Output is every phase with its time.
	Output string `xml:"system-out,omitempty"`
}

// JUnitProperty is a suite's name=value property.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// runProperties are the properties of res's suite: its provider, what
// ran where (faultline's version, the target, the Clusters, the seed and
// the replay command), the lab's time profile, and the release that ran with each manager's
// reported version.
func runProperties(res *engine.Result) []JUnitProperty {
	props := []JUnitProperty{{"provider", res.Provider}}
	if ri := res.Run; ri != nil {
		for _, p := range []JUnitProperty{{"faultline", ri.Faultline}, {"where", ri.Where}, {"clusters", strings.Join(ri.Clusters, ",")}} {
			if p.Value != "" {
				props = append(props, p)
			}
		}
		if ri.Seed != nil {
			props = append(props, JUnitProperty{"seed", strconv.FormatInt(*ri.Seed, 10)})
		}
		if ri.Replay != "" {
			props = append(props, JUnitProperty{"replay", ri.Replay})
		}
	}
	if res.Profile != "" {
		props = append(props, JUnitProperty{"profile", res.Profile})
	}
	if r := res.Release; r != nil {
		props = append(props, JUnitProperty{"release", r.Stack},
			JUnitProperty{"release.clusterAPI", r.ClusterAPI}, JUnitProperty{"release.capv", r.CAPV})
		if r.Untested != "" {
			props = append(props, JUnitProperty{"release.untested", r.Untested})
		}
		for _, m := range slices.Sorted(maps.Keys(r.Managers)) {
			props = append(props, JUnitProperty{"release.manager." + m, r.Managers[m]})
		}
		if u := r.UpgradedTo; u != nil {
			props = append(props, JUnitProperty{"release.upgradedTo", u.Stack},
				JUnitProperty{"release.upgradedTo.clusterAPI", u.ClusterAPI}, JUnitProperty{"release.upgradedTo.capv", u.CAPV})
		}
		for i, v := range r.Via {
			props = append(props, JUnitProperty{fmt.Sprintf("release.via.%d", i), v.Stack})
		}
	}
	for _, w := range res.Workloads {
		for _, m := range w.Measures {
			key := "workload." + w.Name + "." + m.Of + "."
			props = append(props, JUnitProperty{key + "total", m.Total.String()}, JUnitProperty{key + "longest", m.Longest.String()},
				JUnitProperty{key + "gaps", strconv.Itoa(len(m.Gaps))}, JUnitProperty{key + "failed", fmt.Sprintf("%d of %d", m.Failed, m.Samples)})
		}
	}
	return props
}

// JUnitCase is one test case: a failure, an error, a skip, or a pass.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr,omitempty"`
	Time      string        `xml:"time,attr,omitempty"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Error     *JUnitFailure `xml:"error,omitempty"`
	Skipped   *JUnitFailure `xml:"skipped,omitempty"`
	Output    string        `xml:"system-out,omitempty"`
}

// JUnitFailure is a failure, error or skip: a one-line message and the
// details.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes doc with the XML header.
func WriteJUnit(w io.Writer, doc JUnitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// ResultsJUnit is a suite per scenario run, so that CI shows which phase
// regressed: a case per phase (its time since its anchor; a failure with
// the budget when it was not reached in time), per assertion (the time its
// check ran), and per fault that failed or was left in place (an error).
// Each case carries its own line and only its own failure. A phase an
// interruption or a timeout cut short is skipped. A run that errored, was
// interrupted or timed out, was skipped, or failed with no phase or
// assertion to blame also gets a case "run" with the verdict's reason in
// one line; a dry run is that case, skipped. The suite says when and where
// it ran (timestamp, hostname, properties), and its output is every phase
// with its time.
func ResultsJUnit(results []*engine.Result) JUnitSuites {
	var doc JUnitSuites
	for _, res := range results {
		s := JUnitSuite{Name: res.Scenario, Time: seconds(res.FinishedAt.Sub(res.StartedAt)), Properties: runProperties(res),
			Timestamp: res.StartedAt.UTC().Format("2006-01-02T15:04:05"), Output: phaseLines(res)}
		if res.Run != nil {
			s.Hostname = res.Run.Host
		}
		class := "faultline." + res.Provider + "." + res.Scenario
		blamed := false
		// check is a case for a phase or an assertion, failed when !ok.
		check := func(name, time, line string, ok bool, msg string) {
			c := JUnitCase{Name: name, Classname: class, Time: time, Output: line}
			if !ok {
				s.Failures++
				blamed = true
				c.Failure = &JUnitFailure{Message: name + ": " + msg, Text: line}
			}
			s.Cases = append(s.Cases, c)
		}
		for _, p := range res.Phases {
			var at string
			if p.SinceAnchor != nil {
				at = seconds(p.SinceAnchor.Duration)
			}
			if p.Cut != "" {
				// Not reached because the run ended first: the run's
				// case says why, once.
				s.Skipped++
				s.Cases = append(s.Cases, JUnitCase{Name: "phase " + p.Name, Classname: class, Skipped: &JUnitFailure{Message: p.Message}})
				continue
			}
			check("phase "+p.Name, at, phaseLine(p), p.OK, p.Message)
		}
		for _, a := range res.Assertions {
			var took string
			if a.Took != nil {
				took = seconds(a.Took.Duration)
			}
			check("assertion "+a.Name, took, "assertion "+a.Name+": "+a.Message, a.OK, a.Message)
		}
		for _, f := range res.Faults {
			if f.Result == engine.ResultFailed || f.Result == engine.ResultRetained {
				s.Errors++
				msg := "fault " + f.ID + " (" + f.Kind + " on " + f.Target + "): " + f.Result
				s.Cases = append(s.Cases, JUnitCase{Name: "fault " + f.ID, Classname: class, Error: &JUnitFailure{Message: msg}})
			}
		}
		run := JUnitCase{Name: "run", Classname: class, Time: s.Time}
		reason := firstLine(res.Reason)
		switch {
		case res.Verdict == engine.Error, res.Verdict == engine.Interrupted, res.Verdict == engine.TimedOut:
			s.Errors++
			if !strings.HasPrefix(reason, string(res.Verdict)) {
				reason = string(res.Verdict) + ": " + reason
			}
			run.Error = &JUnitFailure{Message: reason, Text: res.Reason}
		case res.Verdict == engine.Skipped:
			s.Skipped++
			run.Skipped = &JUnitFailure{Message: reason}
		case res.Run != nil && res.Run.DryRun:
			s.Skipped++
			run.Skipped = &JUnitFailure{Message: "dry run: nothing was injected"}
		case res.Verdict == engine.Fail && !blamed:
			s.Failures++
			run.Failure = &JUnitFailure{Message: reason, Text: res.Reason}
		}
		if run.Error != nil || run.Skipped != nil || run.Failure != nil || len(s.Cases) == 0 {
			s.Cases = append(s.Cases, run)
		}
		s.Tests = len(s.Cases)
		doc.Suites = append(doc.Suites, s)
	}
	return doc
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// firstLine is s up to its first line break: a message attribute CI views
// show in one line.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// phaseLines is each phase's time against its budget, one a line.
func phaseLines(res *engine.Result) string {
	var lines []string
	for _, p := range res.Phases {
		lines = append(lines, phaseLine(p))
	}
	return strings.Join(lines, "\n")
}

// phaseLine is a phase's time against its budget.
func phaseLine(p engine.PhaseResult) string {
	line := "phase " + p.Name + ": "
	switch {
	case p.SinceAnchor != nil:
		line += fmt.Sprintf("%s after %s", p.SinceAnchor, p.From)
	default:
		line += "not reached"
	}
	if p.Budget != nil {
		line += fmt.Sprintf(" (budget %s)", p.Budget)
	}
	return line
}
