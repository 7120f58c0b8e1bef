package artifacts

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/regularfile"
)

// EnvHistory names the history folder, as --history does.
const EnvHistory = "FAULTLINE_HISTORY"

// MinHistory is how many past passing runs a phase needs before the gate
// judges it.
const MinHistory = 5

// History keeps past results as JSON lines, a file per scenario, in a
// folder: the regression gate's memory. A CI job keeps the folder between
// runs (a cache or an artifact it restores).
type History struct {
	dir string
	// Warn is told of lines skipped as unreadable; nil tells nobody.
	Warn func(string)
}

// OpenHistory opens (and creates) the history folder.
func OpenHistory(dir string) (*History, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("history %s: %w", dir, err)
	}
	return &History{dir: dir}, nil
}

// record is one past run, as the history keeps it.
type record struct {
	// StartedAt is zero in records written before it was kept.
	StartedAt  time.Time      `json:"startedAt,omitzero"`
	FinishedAt time.Time      `json:"finishedAt"`
	Provider   string         `json:"provider"`
	Profile    string         `json:"profile,omitempty"`
	Verdict    engine.Verdict `json:"verdict"`
	// Phases are the seconds from each reached phase's anchor.
	Phases map[string]float64 `json:"phases"`
}

func (h *History) file(scenario string) string { return filepath.Join(h.dir, scenario+".jsonl") }

// HistoryName is the name res's runs are kept under: the scenario's, or
// for a run with --set overrides the scenario's with a digest of them
// (power-off-worker@1f0c9a2e), so that a run with a budget or a window
// changed is compared only with runs changed the same way.
func HistoryName(res *engine.Result) string {
	if res.Run == nil || len(res.Run.Sets) == 0 {
		return res.Scenario
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(res.Run.Sets)) {
		fmt.Fprintf(h, "%s=%s\x00", k, res.Run.Sets[k])
	}
	return res.Scenario + "@" + hex.EncodeToString(h.Sum(nil))[:8]
}

// Add appends res to its history (HistoryName).
func (h *History) Add(res *engine.Result) error {
	r := record{StartedAt: res.StartedAt, FinishedAt: res.FinishedAt, Provider: res.Provider, Profile: res.Profile, Verdict: res.Verdict, Phases: map[string]float64{}}
	for _, p := range res.Phases {
		if p.OK && p.SinceAnchor != nil {
			r.Phases[p.Name] = p.SinceAnchor.Seconds()
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := regularfile.OpenWrite(h.file(HistoryName(res)), os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return errors.Join(fmt.Errorf("history: %w", err), f.Close())
	}
	return f.Close()
}

// PhaseStats is one phase's history: the seconds it took in past passing
// runs on the same provider and profile. Failed counts the runs that did
// not pass, which the statistics leave out; Points are every run in the
// order they finished, passing or not, for a trend.
type PhaseStats struct {
	Phase  string  `json:"phase"`
	Runs   int     `json:"runs"`
	Failed int     `json:"failed"`
	P50    float64 `json:"p50"`
	P95    float64 `json:"p95"`
	Last   float64 `json:"last"`
	Points []Point `json:"points,omitempty"`
}

// Point is one past run in a phase's trend: when it finished, its verdict,
// and the phase's seconds when the run reached it.
type Point struct {
	At      time.Time      `json:"at"`
	Verdict engine.Verdict `json:"verdict"`
	Reached bool           `json:"reached"`
	Seconds float64        `json:"seconds,omitempty"`
}

// Limit is the longest the phase may take before the gate calls it a
// regression: P95 plus the larger of 5 seconds and 20 %.
func (s PhaseStats) Limit() float64 { return s.P95 + math.Max(5, 0.2*s.P95) }

// Stats reads the history of a scenario on a provider and profile, phase
// by phase, from its passing runs. A scenario with no history has none.
func (h *History) Stats(scenario, provider, profile string) (map[string]PhaseStats, error) {
	return h.StatsBefore(scenario, provider, profile, time.Time{})
}

// StatsBefore is Stats over the runs that finished before before (all of
// them when it is zero): a run's report shows it against the runs before
// it, not against itself or later ones.
func (h *History) StatsBefore(scenario, provider, profile string, before time.Time) (map[string]PhaseStats, error) {
	recs, err := h.records(scenario, provider, profile, before)
	if err != nil {
		return nil, err
	}
	phases := map[string]bool{}
	failed := 0
	for _, r := range recs {
		for name := range r.Phases {
			phases[name] = true
		}
		if r.Verdict != engine.Pass {
			failed++
		}
	}
	out := map[string]PhaseStats{}
	for name := range phases {
		st := PhaseStats{Phase: name, Failed: failed}
		var passing []float64
		for _, r := range recs {
			secs, reached := r.Phases[name]
			st.Points = append(st.Points, Point{At: r.FinishedAt, Verdict: r.Verdict, Reached: reached, Seconds: secs})
			if reached && r.Verdict == engine.Pass {
				passing = append(passing, secs)
			}
		}
		if len(passing) > 0 {
			st.Runs, st.Last = len(passing), passing[len(passing)-1]
			sort.Float64s(passing)
			st.P50, st.P95 = percentile(passing, 50), percentile(passing, 95)
		}
		out[name] = st
	}
	return out, nil
}

// Took is the median time the scenario's past passing runs on provider
// and profile took, start to finish, and false when none kept it: what a
// run of several reads to start the longest first.
func (h *History) Took(scenario, provider, profile string) (time.Duration, bool, error) {
	rs, err := h.records(scenario, provider, profile, time.Time{})
	if err != nil {
		return 0, false, err
	}
	var took []float64
	for _, r := range rs {
		if r.Verdict == engine.Pass && !r.StartedAt.IsZero() {
			took = append(took, r.FinishedAt.Sub(r.StartedAt).Seconds())
		}
	}
	if len(took) == 0 {
		return 0, false, nil
	}
	sort.Float64s(took)
	return time.Duration(percentile(took, 50) * float64(time.Second)), true, nil
}

// records are the scenario's runs on provider and profile that finished
// before before (any time when it is zero), in file order.
func (h *History) records(scenario, provider, profile string, before time.Time) ([]record, error) {
	file := h.file(scenario)
	f, err := regularfile.Open(file, regularfile.Journal)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var out []record
	var skipped []int
	rd := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, long, err := readLine(rd, maxHistoryLine)
		if errors.Is(err, io.EOF) && len(b) == 0 {
			break
		} else if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("history %s: %w", file, err)
		}
		// A torn line (a run killed as it wrote) or one past the cap
		// is one lost record, not a history lost.
		var r record
		if long || json.Unmarshal(b, &r) != nil {
			skipped = append(skipped, line)
			continue
		}
		if r.Provider != provider || r.Profile != profile || (!before.IsZero() && !r.FinishedAt.Before(before)) {
			continue
		}
		out = append(out, r)
	}
	if len(skipped) > 0 && h.Warn != nil {
		h.Warn(fmt.Sprintf("history %s: %d unreadable line(s) skipped (the first: line %d)", file, len(skipped), skipped[0]))
	}
	return out, nil
}

// maxHistoryLine bounds a history record; one is a few hundred bytes.
const maxHistoryLine = 64 << 10

// readLine reads one line of rd without its newline, keeping at most max
// bytes of it; long says it had more (the rest is read and dropped).
func readLine(rd *bufio.Reader, max int) (line []byte, long bool, err error) {
	for {
		chunk, err := rd.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			long = true
		} else {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), long, err
	}
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// Regressions are the phases of res that took longer than their
// history's Limit, for phases with at least MinHistory past runs.
func Regressions(res *engine.Result, stats map[string]PhaseStats) []string {
	var out []string
	for _, p := range res.Phases {
		s, ok := stats[p.Name]
		if !ok || s.Runs < MinHistory || p.SinceAnchor == nil {
			continue
		}
		if took := p.SinceAnchor.Seconds(); took > s.Limit() {
			out = append(out, fmt.Sprintf("phase %s took %.1fs, above its history's P95 %.1fs + max(5s, 20%%) = %.1fs (%d runs)", p.Name, took, s.P95, s.Limit(), s.Runs))
		}
	}
	return out
}

// ApplyGate fails a passing res whose phases regressed against stats.
func ApplyGate(res *engine.Result, stats map[string]PhaseStats) {
	if reg := Regressions(res, stats); len(reg) > 0 && res.Verdict == engine.Pass {
		res.Verdict = engine.Fail
		res.Reason = "regression: " + strings.Join(reg, "; ")
	}
}
