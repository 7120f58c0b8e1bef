package artifacts

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

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
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr,omitempty"`
	// Properties say what ran: the lab's profile and release.
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	Cases      []JUnitCase     `xml:"testcase"`
}

// JUnitProperty is a suite's name=value property.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// runProperties are the properties of res's suite: its provider, the
// lab's time profile, and the release that ran with each manager's
// reported version.
func runProperties(res *engine.Result) []JUnitProperty {
	props := []JUnitProperty{{"provider", res.Provider}}
	if res.Profile != "" {
		props = append(props, JUnitProperty{"profile", res.Profile})
	}
	if r := res.Release; r != nil {
		props = append(props, JUnitProperty{"release", r.Stack},
			JUnitProperty{"release.clusterAPI", r.ClusterAPI}, JUnitProperty{"release.capv", r.CAPV})
		for _, m := range slices.Sorted(maps.Keys(r.Managers)) {
			props = append(props, JUnitProperty{"release.manager." + m, r.Managers[m]})
		}
		if u := r.UpgradedTo; u != nil {
			props = append(props, JUnitProperty{"release.upgradedTo", u.Stack},
				JUnitProperty{"release.upgradedTo.clusterAPI", u.ClusterAPI}, JUnitProperty{"release.upgradedTo.capv", u.CAPV})
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
// the budget when it was not reached in time), per assertion, and per
// fault that failed or was left in place (an error). A phase an
// interruption or a timeout cut short is skipped. A run that errored, was
// interrupted or timed out, was skipped, or failed with no phase or assertion to blame (or had none,
// as a dry run) also gets a case "run" with the verdict's reason. The
// suite's output is every phase with its time.
func ResultsJUnit(results []*engine.Result) JUnitSuites {
	var doc JUnitSuites
	for _, res := range results {
		s := JUnitSuite{Name: res.Scenario, Time: fmt.Sprintf("%.3f", res.FinishedAt.Sub(res.StartedAt).Seconds()), Properties: runProperties(res)}
		class := "faultline." + res.Provider + "." + res.Scenario
		blamed := false
		// check is a case for a phase or an assertion, failed when !ok.
		check := func(name, time string, ok bool, msg string) {
			c := JUnitCase{Name: name, Classname: class, Time: time}
			if !ok {
				s.Failures++
				blamed = true
				c.Failure = &JUnitFailure{Message: name + ": " + msg, Text: failureText(res)}
			}
			s.Cases = append(s.Cases, c)
		}
		for _, p := range res.Phases {
			var at string
			if p.SinceAnchor != nil {
				at = fmt.Sprintf("%.3f", p.SinceAnchor.Seconds())
			}
			if p.Cut != "" {
				// Not reached because the run ended first: the run's
				// case says why, once.
				s.Skipped++
				s.Cases = append(s.Cases, JUnitCase{Name: "phase " + p.Name, Classname: class, Skipped: &JUnitFailure{Message: p.Message}})
				continue
			}
			check("phase "+p.Name, at, p.OK, p.Message)
		}
		for _, a := range res.Assertions {
			check("assertion "+a.Name, "", a.OK, a.Message)
		}
		for _, f := range res.Faults {
			if f.Result == engine.ResultFailed || f.Result == engine.ResultRetained {
				s.Errors++
				s.Cases = append(s.Cases, JUnitCase{Name: "fault " + f.ID, Classname: class,
					Error: &JUnitFailure{Message: "fault " + f.ID + " (" + f.Kind + " on " + f.Target + "): " + f.Result}})
			}
		}
		run := JUnitCase{Name: "run", Classname: class, Time: s.Time, Output: phaseLines(res)}
		switch {
		case res.Verdict == engine.Error, res.Verdict == engine.Interrupted, res.Verdict == engine.TimedOut:
			s.Errors++
			run.Error = &JUnitFailure{Message: res.Reason, Text: failureText(res)}
		case res.Verdict == engine.Skipped:
			s.Skipped++
			run.Skipped = &JUnitFailure{Message: res.Reason}
		case res.Verdict == engine.Fail && !blamed:
			s.Failures++
			run.Failure = &JUnitFailure{Message: res.Reason, Text: failureText(res)}
		}
		if run.Error != nil || run.Skipped != nil || run.Failure != nil || len(s.Cases) == 0 {
			s.Cases = append(s.Cases, run)
		} else {
			s.Cases[0].Output = phaseLines(res)
		}
		s.Tests = len(s.Cases)
		doc.Suites = append(doc.Suites, s)
	}
	return doc
}

// failureText lists what did not hold, each with its times.
func failureText(res *engine.Result) string {
	var lines []string
	for _, p := range res.Phases {
		if !p.OK {
			lines = append(lines, "phase "+p.Name+": "+p.Message)
		}
	}
	for _, a := range res.Assertions {
		if !a.OK {
			lines = append(lines, "assertion "+a.Name+": "+a.Message)
		}
	}
	for _, f := range res.Faults {
		if f.Result == engine.ResultFailed || f.Result == engine.ResultRetained {
			lines = append(lines, "fault "+f.ID+" ("+f.Kind+" on "+f.Target+"): "+f.Result)
		}
	}
	return strings.Join(lines, "\n")
}

// phaseLines is each phase's time against its budget, one a line.
func phaseLines(res *engine.Result) string {
	var lines []string
	for _, p := range res.Phases {
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
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
