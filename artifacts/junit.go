package artifacts

import (
	"encoding/xml"
	"fmt"
	"io"
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
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr,omitempty"`
	Cases    []JUnitCase `xml:"testcase"`
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

// ResultsJUnit is one suite named suite with a case per scenario run: a
// failed run's failure names each phase missed with its budget and each
// assertion that did not hold; an error run is an error, a skipped one a
// skip. The case's output is every phase with its time.
func ResultsJUnit(suite string, results []*engine.Result) JUnitSuites {
	s := JUnitSuite{Name: suite}
	var total float64
	for _, res := range results {
		secs := res.FinishedAt.Sub(res.StartedAt).Seconds()
		total += secs
		c := JUnitCase{Name: res.Scenario, Classname: "faultline." + res.Provider, Time: fmt.Sprintf("%.3f", secs), Output: phaseLines(res)}
		switch res.Verdict {
		case engine.Fail:
			s.Failures++
			c.Failure = &JUnitFailure{Message: res.Reason, Text: failureText(res)}
		case engine.Error:
			s.Errors++
			c.Error = &JUnitFailure{Message: res.Reason, Text: failureText(res)}
		case engine.Skipped:
			s.Skipped++
			c.Skipped = &JUnitFailure{Message: res.Reason}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	s.Time = fmt.Sprintf("%.3f", total)
	return JUnitSuites{Suites: []JUnitSuite{s}}
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
