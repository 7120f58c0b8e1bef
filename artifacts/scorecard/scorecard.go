// Package scorecard compares the results of the same scenarios on two
// sides (two releases, before and after an upgrade): per scenario and per
// phase, the median and spread on each side and the verdicts, with every
// difference beyond a tolerance that a rank test tells from noise
// flagged, and the worse ones counted as regressions.
package scorecard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/regularfile"
)

// Tolerance is how much slower a phase's median may get before it is a
// regression: both more than Ratio of the base median and more than Abs.
type Tolerance struct {
	Ratio float64       `json:"ratio"`
	Abs   time.Duration `json:"abs"`
}

// DefaultTolerance is P50 +20 % and +5 s.
var DefaultTolerance = Tolerance{Ratio: 0.2, Abs: 5 * time.Second}

func (t Tolerance) String() string {
	return fmt.Sprintf("median +%.0f%% and +%s", t.Ratio*100, t.Abs)
}

// A phase's times are told apart from noise by a one-sided
// Mann-Whitney rank test (exact, with ties counted against the flag):
// a move beyond the tolerance is flagged only when its p-value is below
// Alpha, which takes at least MinRuns runs per side (with 3 and 3 the
// smallest p is 1/20). On a busy machine the same release against itself
// moves its medians by 70 % and more from run to run; the ranks of 4 and
// more runs a side do not keep such a move unless every run of one side
// is slower than almost every run of the other.
const (
	Alpha   = 0.05
	MinRuns = 4
)

// Scorecard is the comparison of two sides.
type Scorecard struct {
	Base      Side       `json:"base"`
	Target    Side       `json:"target"`
	Tolerance Tolerance  `json:"tolerance"`
	Scenarios []Scenario `json:"scenarios"`
	// Regressions counts the flags that are regressions.
	Regressions int `json:"regressions"`
	// Undecided counts the phases that moved beyond the tolerance with
	// fewer than MinRuns runs on a side: too few to tell from noise.
	Undecided int `json:"undecided"`
}

// Side names one side: its label (the release, or the folder) and what
// ran there.
type Side struct {
	Label string `json:"label"`
	// Release is the release its results name, when they agree.
	Release *engine.Release `json:"release,omitempty"`
	Runs    int             `json:"runs"`
}

// Scenario is one scenario's row: its verdicts and phases on each side.
type Scenario struct {
	Name           string         `json:"name"`
	BaseVerdicts   map[string]int `json:"baseVerdicts"`
	TargetVerdicts map[string]int `json:"targetVerdicts"`
	Phases         []Phase        `json:"phases"`
	// Flags are the differences beyond the tolerance, the scenario's own
	// (a verdict that changed) and its phases'.
	Flags []Flag `json:"flags,omitempty"`
}

// Phase is one phase on both sides.
type Phase struct {
	Name   string `json:"name"`
	Base   Stats  `json:"base"`
	Target Stats  `json:"target"`
	// P is the rank test's p-value that the side whose median is
	// higher is the slower, when both sides reached the phase.
	P    *float64 `json:"p,omitempty"`
	Flag *Flag    `json:"flag,omitempty"`
	// Undecided says the phase moved beyond the tolerance, with too few
	// runs on a side to tell from noise.
	Undecided string `json:"undecided,omitempty"`
}

// Stats are one phase's times on one side, from its anchor: the runs
// that reached it, and how many missed it.
type Stats struct {
	Samples []time.Duration `json:"samples"`
	Missed  int             `json:"missed"`
	Median  time.Duration   `json:"median"`
	Min     time.Duration   `json:"min"`
	Max     time.Duration   `json:"max"`
}

// Flag is one difference beyond the tolerance; a regression is a worse
// one (slower, missed, a worse verdict).
type Flag struct {
	Phase      string `json:"phase,omitempty"`
	What       string `json:"what"`
	Regression bool   `json:"regression"`
}

// Read reads every result.json under dir (a run's folder, a run of
// several, a folder of such), oldest first.
func Read(dir string) ([]*engine.Result, error) {
	var out []*engine.Result
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != artifacts.ResultFile {
			return nil
		}
		res, err := artifacts.ReadResult(filepath.Dir(path))
		if err != nil {
			return err
		}
		out = append(out, res)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read results under %s: %w", dir, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s under %s: expected the folder of a run (faultline run --artifacts)", artifacts.ResultFile, dir)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

// ReadDirs reads the results under two folders, base and target.
func ReadDirs(base, target string) ([]*engine.Result, []*engine.Result, error) {
	b, errB := Read(base)
	t, errT := Read(target)
	return b, t, errors.Join(errB, errT)
}

// Compare builds the scorecard of base against target: every scenario
// either side ran, in name order.
func Compare(baseLabel string, base []*engine.Result, targetLabel string, target []*engine.Result, tol Tolerance) *Scorecard {
	sc := &Scorecard{Base: side(baseLabel, base), Target: side(targetLabel, target), Tolerance: tol}
	byName := func(rs []*engine.Result) map[string][]*engine.Result {
		m := map[string][]*engine.Result{}
		for _, r := range rs {
			m[r.Scenario] = append(m[r.Scenario], r)
		}
		return m
	}
	b, t := byName(base), byName(target)
	var names []string
	for n := range b {
		names = append(names, n)
	}
	for n := range t {
		if _, ok := b[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		row := compareScenario(n, b[n], t[n], tol)
		for _, f := range row.Flags {
			if f.Regression {
				sc.Regressions++
			}
		}
		for _, p := range row.Phases {
			if p.Undecided != "" {
				sc.Undecided++
			}
		}
		sc.Scenarios = append(sc.Scenarios, row)
	}
	return sc
}

func side(label string, rs []*engine.Result) Side {
	s := Side{Label: label, Runs: len(rs)}
	for _, r := range rs {
		if r.Release == nil || (rs[0].Release != nil && r.Release.Stack != rs[0].Release.Stack) {
			return s // no release, or several: the label says it
		}
	}
	if len(rs) > 0 {
		s.Release = rs[0].Release
	}
	return s
}

// verdictRank orders verdicts from best to worst; a skipped run says
// nothing either way.
var verdictRank = map[engine.Verdict]int{engine.Skipped: -1, engine.Pass: 0, engine.Fail: 1, engine.TimedOut: 2, engine.Interrupted: 2, engine.Error: 3}

func compareScenario(name string, base, target []*engine.Result, tol Tolerance) Scenario {
	row := Scenario{Name: name, BaseVerdicts: verdicts(base), TargetVerdicts: verdicts(target)}
	switch {
	case len(base) == 0:
		row.Flags = append(row.Flags, Flag{What: "ran only on the target side"})
	case len(target) == 0:
		row.Flags = append(row.Flags, Flag{What: "did not run on the target side", Regression: true})
	case !sameKeys(row.BaseVerdicts, row.TargetVerdicts):
		worse := worst(target) > worst(base)
		row.Flags = append(row.Flags, Flag{What: fmt.Sprintf("verdict %s -> %s", verdictList(row.BaseVerdicts), verdictList(row.TargetVerdicts)), Regression: worse})
	}
	for _, p := range phaseNames(base, target) {
		ph := Phase{Name: p, Base: stats(base, p), Target: stats(target, p)}
		if len(base) > 0 && len(target) > 0 {
			comparePhase(&ph, tol)
		}
		if ph.Flag != nil {
			row.Flags = append(row.Flags, *ph.Flag)
		}
		row.Phases = append(row.Phases, ph)
	}
	return row
}

// comparePhase flags a phase missed on one side only, or whose median
// moved beyond the tolerance where the rank test tells the move from
// noise; with too few runs to tell, it says so instead.
func comparePhase(ph *Phase, tol Tolerance) {
	b, t := ph.Base, ph.Target
	switch {
	case len(b.Samples) == 0 && len(t.Samples) == 0:
		return
	case t.Missed > 0 && b.Missed == 0:
		ph.Flag = &Flag{Phase: ph.Name, What: fmt.Sprintf("missed in %d of %d target runs, reached in every base run", t.Missed, t.Missed+len(t.Samples)), Regression: true}
		return
	case len(t.Samples) == 0:
		return // missed on both sides
	case len(b.Samples) == 0:
		ph.Flag = &Flag{Phase: ph.Name, What: fmt.Sprintf("reached in %d target runs, never on the base side", len(t.Samples))}
		return
	}
	d := t.Median - b.Median
	slower, faster := rankP(b.Samples, t.Samples), rankP(t.Samples, b.Samples)
	p := slower
	if d < 0 {
		p = faster
	}
	ph.P = &p
	over := func(d time.Duration) bool { return d > tol.Abs && float64(d) > tol.Ratio*float64(b.Median) }
	if !over(d) && !over(-d) {
		return
	}
	pct := 100 * float64(d) / float64(max(b.Median, time.Millisecond))
	what := fmt.Sprintf("slower: median %s -> %s (+%s, +%.0f%%, p=%.3f)", round(b.Median), round(t.Median), round(d), pct, p)
	if d < 0 {
		what = fmt.Sprintf("faster: median %s -> %s (%s, %.0f%%, p=%.3f)", round(b.Median), round(t.Median), round(d), pct, p)
	}
	switch {
	case len(b.Samples) < MinRuns || len(t.Samples) < MinRuns:
		ph.Undecided = fmt.Sprintf("%s; too few runs to tell from noise (%d and %d; the rank test needs %d a side)", strings.SplitN(what, " (", 2)[0], len(b.Samples), len(t.Samples), MinRuns)
	case p < Alpha:
		ph.Flag = &Flag{Phase: ph.Name, What: what, Regression: d > 0}
	}
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

func verdicts(rs []*engine.Result) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[string(r.Verdict)]++
	}
	return m
}

func worst(rs []*engine.Result) int {
	w := -1
	for _, r := range rs {
		w = max(w, verdictRank[r.Verdict])
	}
	return w
}

func sameKeys(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// verdictList is "2 pass, 1 fail".
func verdictList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", m[k], k)
	}
	return s
}

// phaseNames are the phases of either side, in the order the runs list
// them.
func phaseNames(sides ...[]*engine.Result) []string {
	var names []string
	for _, rs := range sides {
		for _, r := range rs {
			for _, p := range r.Phases {
				if !slices.Contains(names, p.Name) {
					names = append(names, p.Name)
				}
			}
		}
	}
	return names
}

// stats are phase's times from its anchor over rs; a run that was not
// carried out (skipped, an error before the phase's step) counts
// neither way.
func stats(rs []*engine.Result, phase string) Stats {
	var s Stats
	for _, r := range rs {
		for _, p := range r.Phases {
			if p.Name != phase {
				continue
			}
			reached := p.ObservedAt != nil
			switch {
			case reached && p.SinceAnchor != nil:
				s.Samples = append(s.Samples, p.SinceAnchor.Duration)
			case reached && p.SinceInject != nil:
				s.Samples = append(s.Samples, p.SinceInject.Duration)
			case !reached && p.Cut == "" && r.Verdict != engine.Skipped:
				s.Missed++
			}
		}
	}
	if len(s.Samples) == 0 {
		return s
	}
	sorted := slices.Clone(s.Samples)
	slices.Sort(sorted)
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	if n := len(sorted); n%2 == 1 {
		s.Median = sorted[n/2]
	} else {
		s.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return s
}

// WriteFiles writes the scorecard into dir as scorecard.json,
// scorecard.html and junit.xml.
func (sc *Scorecard) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	write := func(name string, f func(*os.File) error) error {
		out, err := regularfile.Create(filepath.Join(dir, name), 0o644)
		if err != nil {
			return err
		}
		return errors.Join(f(out), out.Close())
	}
	return errors.Join(
		write("scorecard.json", func(f *os.File) error { return sc.WriteJSON(f) }),
		write("scorecard.html", func(f *os.File) error { return sc.WriteHTML(f) }),
		write(artifacts.JUnitFile, func(f *os.File) error { return artifacts.WriteJUnit(f, sc.JUnit()) }),
	)
}
