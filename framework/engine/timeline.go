package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
)

// Event is one line of a run's timeline.
type Event struct {
	// Time is when faultline observed or did the thing.
	Time time.Time `json:"time"`
	// SinceInject is the offset from the first injection; nil before it.
	SinceInject *scenario.Duration `json:"sinceInject,omitempty"`
	// Source is who reported the event: runner, journal, or a provider.
	Source string `json:"source"`
	// Object is what the event is about (VirtualMachine/vm-1, phase/vm-off).
	Object string `json:"object,omitempty"`
	// What happened, as a short verb phrase (fault-injected, phase-reached).
	What    string            `json:"event"`
	Details map[string]string `json:"details,omitempty"`
}

// Timeline records events in memory and, as they happen, as JSON lines, so a
// run killed half-way still leaves its evidence on disk.
type Timeline struct {
	mu       sync.Mutex
	w        io.Writer
	events   []Event
	injectAt time.Time
	werr     error
	// observer, when set, is told every event after it is recorded.
	observer func(Event)
}

// NewTimeline returns a timeline writing JSON lines to w (nil: memory only).
func NewTimeline(w io.Writer) *Timeline { return &Timeline{w: w} }

// Record appends an event stamped with the current time.
func (t *Timeline) Record(source, object, what string, details map[string]string) Event {
	e, observer := t.record(source, object, what, details)
	if observer != nil {
		observer(e)
	}
	return e
}

// observe has the timeline tell fn every event recorded from now on.
func (t *Timeline) observe(fn func(Event)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observer = fn
}

func (t *Timeline) record(source, object, what string, details map[string]string) (Event, func(Event)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := Event{Time: time.Now(), Source: source, Object: object, What: what, Details: details}
	if !t.injectAt.IsZero() {
		d := scenario.D(e.Time.Sub(t.injectAt))
		e.SinceInject = &d
	}
	t.events = append(t.events, e)
	if t.w != nil && t.werr == nil {
		b, err := json.Marshal(e)
		if err == nil {
			_, err = fmt.Fprintf(t.w, "%s\n", b)
		}
		t.werr = err
	}
	return e, t.observer
}

// markInjected sets the origin of SinceInject, once.
func (t *Timeline) markInjected(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.injectAt.IsZero() {
		t.injectAt = at
	}
}

// Events returns a copy of the events so far.
func (t *Timeline) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.events...)
}

// Err reports the first error writing the JSON lines, if any.
func (t *Timeline) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.werr
}
