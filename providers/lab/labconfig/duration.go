package labconfig

import (
	"encoding/json"
	"time"
)

// Duration is a time.Duration that reads and writes as a Go duration string
// ("90s", "5m"). Bare numbers are rejected when a scenario is loaded, because
// "300" could mean seconds or milliseconds depending on who wrote it.
type Duration struct {
	time.Duration
}

// D returns a Duration of d.
func D(d time.Duration) Duration { return Duration{Duration: d} }

// IsZero reports whether the duration was left unset.
func (d Duration) IsZero() bool { return d.Duration == 0 }

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string such as "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}
