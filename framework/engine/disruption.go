package engine

import (
	"sort"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
)

// series is one measure of a workload (requests through its Service, or
// its ready endpoints): every sample, kept so that gaps are cut from them
// in time order, whatever order overlapping requests came back in.
type series struct {
	mu      sync.Mutex
	samples []sample
	// unreadable counts readings that said nothing (the API server did not
	// answer a list of EndpointSlices): not a gap, not a good sample.
	unreadable int
	// pending are the samples begun and not yet ended, by number, with
	// the time each began: the measure is known only up to the first of
	// them (state).
	pending map[uint64]time.Time
	begun   uint64
}

type sample struct {
	at     time.Time
	ok     bool
	reason string
	// retried: a good request sample whose first try failed.
	retried bool
}

// begin notes a sample taken now, and returns its number and time for end.
func (s *series) begin() (uint64, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[uint64]time.Time{}
	}
	s.begun++
	at := time.Now()
	s.pending[s.begun] = at
	return s.begun, at
}

// end records the outcome of sample n: sm, or nothing when sm is nil.
func (s *series) end(n uint64, sm *sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, n)
	if sm != nil {
		s.samples = append(s.samples, *sm)
	}
}

func (s *series) unread() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unreadable++
}

// Gap is a time a measure was down: from its first failed sample to the
// first good one after it (or to the end of the watch, Open).
type Gap struct {
	Start  time.Time
	End    time.Time
	Failed int
	// Reason is the first failed sample's ("via 172.18.0.5: connection
	// refused", "no ready endpoint").
	Reason string
	Open   bool
}

// Duration is how long the gap lasted.
func (g Gap) Duration() time.Duration { return g.End.Sub(g.Start) }

// sorted returns the samples in time order, and the unreadable count.
func (s *series) sorted() ([]sample, int) {
	samples, unreadable, _ := s.snapshot()
	return samples, unreadable
}

// snapshot returns, at one moment, the samples in time order, the
// unreadable count and when each pending sample began.
func (s *series) snapshot() (samples []sample, unreadable int, pending []time.Time) {
	s.mu.Lock()
	samples = append([]sample(nil), s.samples...)
	unreadable = s.unreadable
	for _, at := range s.pending {
		pending = append(pending, at)
	}
	s.mu.Unlock()
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].at.Before(samples[j].at) })
	return samples, unreadable, pending
}

// gaps cuts the gaps from samples (in time order); a gap still open ends
// at until.
func gaps(samples []sample, until time.Time) []Gap {
	var out []Gap
	var cur *Gap
	for _, sm := range samples {
		switch {
		case !sm.ok && cur == nil:
			cur = &Gap{Start: sm.at, Failed: 1, Reason: sm.reason}
		case !sm.ok:
			cur.Failed++
		case cur != nil:
			cur.End = sm.at
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		cur.End, cur.Open = until, true
		if cur.End.Before(cur.Start) {
			cur.End = cur.Start
		}
		out = append(out, *cur)
	}
	return out
}

// state is the measure now: down or not, since when (the start of the
// current gap, or of the good samples after the last one), and up to when
// it is known (the last sample it was read from). It is read from the
// samples begun before the first one still pending: a request begun later
// may have been answered while an earlier one waits for its timeout, and
// the measure is not back while that one may yet fail. No such sample yet
// is neither: known is false.
func (s *series) state() (down bool, since, upto time.Time, known bool) {
	samples, _, pending := s.snapshot()
	for _, at := range pending {
		i := sort.Search(len(samples), func(i int) bool { return !samples[i].at.Before(at) })
		samples = samples[:i]
	}
	if len(samples) == 0 {
		return false, time.Time{}, time.Time{}, false
	}
	last := samples[len(samples)-1]
	since = last.at
	for i := len(samples) - 1; i >= 0 && samples[i].ok == last.ok; i-- {
		since = samples[i].at
	}
	return !last.ok, since, last.at, true
}

// MeasureResult is one measure of a workload over the run.
type MeasureResult struct {
	Of         string `json:"of"`
	Samples    int    `json:"samples"`
	Failed     int    `json:"failed"`
	Unreadable int    `json:"unreadable,omitempty"`
	// Retried counts the request samples that succeeded only on their
	// retry through another node: a client that does not retry would
	// have failed them.
	Retried int `json:"retried,omitempty"`
	// Total is the time the measure was down in all, Longest its longest
	// gap.
	Total   scenario.Duration `json:"total"`
	Longest scenario.Duration `json:"longest"`
	Gaps    []GapResult       `json:"gaps"`
}

// GapResult is a Gap as result.json keeps it.
type GapResult struct {
	Start time.Time `json:"start"`
	// SinceInject is Start minus the first injection; nil before any.
	SinceInject *scenario.Duration `json:"sinceInject,omitempty"`
	Duration    scenario.Duration  `json:"duration"`
	Failed      int                `json:"failed"`
	Reason      string             `json:"reason"`
	// Open: the measure was still down when the watch ended.
	Open bool `json:"open,omitempty"`
}

// result sums the series up to until; firstInject is the origin of
// SinceInject (zero before any fault).
func (s *series) result(of string, until, firstInject time.Time) MeasureResult {
	samples, unreadable := s.sorted()
	m := MeasureResult{Of: of, Samples: len(samples), Unreadable: unreadable, Gaps: []GapResult{}}
	for _, sm := range samples {
		if !sm.ok {
			m.Failed++
		}
		if sm.retried {
			m.Retried++
		}
	}
	for _, g := range gaps(samples, until) {
		gr := GapResult{Start: g.Start, Duration: scenario.D(g.Duration()), Failed: g.Failed, Reason: g.Reason, Open: g.Open}
		if !firstInject.IsZero() {
			d := scenario.D(g.Start.Sub(firstInject))
			gr.SinceInject = &d
		}
		m.Total.Duration += g.Duration()
		if g.Duration() > m.Longest.Duration {
			m.Longest = scenario.D(g.Duration())
		}
		m.Gaps = append(m.Gaps, gr)
	}
	return m
}
