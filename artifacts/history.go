package artifacts

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
)

// EnvHistory names the history folder, as --history does.
const EnvHistory = "FAULTLINE_HISTORY"

// MinHistory is how many past passing runs a phase needs before the gate
// judges it.
const MinHistory = 5

// History keeps past results as JSON lines, a file per scenario, in a
// folder: the regression gate's memory. A CI job keeps the folder between
// runs (a cache or an artifact it restores).
type History struct{ dir string }

// OpenHistory opens (and creates) the history folder.
func OpenHistory(dir string) (*History, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("history %s: %w", dir, err)
	}
	return &History{dir: dir}, nil
}

// record is one past run, as the history keeps it.
type record struct {
	FinishedAt time.Time      `json:"finishedAt"`
	Provider   string         `json:"provider"`
	Profile    string         `json:"profile,omitempty"`
	Verdict    engine.Verdict `json:"verdict"`
	// Phases are the seconds from each reached phase's anchor.
	Phases map[string]float64 `json:"phases"`
}

func (h *History) file(scenario string) string { return filepath.Join(h.dir, scenario+".jsonl") }

// Add appends res to its scenario's history.
func (h *History) Add(res *engine.Result) error {
	r := record{FinishedAt: res.FinishedAt, Provider: res.Provider, Profile: res.Profile, Verdict: res.Verdict, Phases: map[string]float64{}}
	for _, p := range res.Phases {
		if p.OK && p.SinceAnchor != nil {
			r.Phases[p.Name] = p.SinceAnchor.Seconds()
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(h.file(res.Scenario), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("history: %w", err)
	}
	return f.Close()
}

// PhaseStats is one phase's history: the seconds it took in past passing
// runs on the same provider and profile.
type PhaseStats struct {
	Phase string  `json:"phase"`
	Runs  int     `json:"runs"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	Last  float64 `json:"last"`
}

// Limit is the longest the phase may take before the gate calls it a
// regression: P95 plus the larger of 5 seconds and 20 %.
func (s PhaseStats) Limit() float64 { return s.P95 + math.Max(5, 0.2*s.P95) }

// Stats reads the history of a scenario on a provider and profile, phase
// by phase, from its passing runs. A scenario with no history has none.
func (h *History) Stats(scenario, provider, profile string) (map[string]PhaseStats, error) {
	f, err := os.Open(h.file(scenario))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]PhaseStats{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	seen := map[string][]float64{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("history %s:%d: %w", h.file(scenario), line, err)
		}
		if r.Verdict != engine.Pass || r.Provider != provider || r.Profile != profile {
			continue
		}
		for name, secs := range r.Phases {
			seen[name] = append(seen[name], secs)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", h.file(scenario), err)
	}
	out := map[string]PhaseStats{}
	for name, all := range seen {
		last := all[len(all)-1]
		sort.Float64s(all)
		out[name] = PhaseStats{Phase: name, Runs: len(all), P50: percentile(all, 50), P95: percentile(all, 95), Last: last}
	}
	return out, nil
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
