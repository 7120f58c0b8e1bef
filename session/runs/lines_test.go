package runs

import (
	"bytes"
	"testing"
)

// The lines of scenarios run side by side reach stderr whole, each
// beginning with its scenario's name, however they were written.
func TestPrefixedLines(t *testing.T) {
	var buf bytes.Buffer
	out := &lockedWriter{w: &buf}
	a, b := &prefixed{w: out, prefix: "a: "}, &prefixed{w: out, prefix: "b: "}
	for _, w := range []struct {
		to   *prefixed
		text string
	}{{a, "one "}, {b, "first\nsecond"}, {a, "line\n"}, {b, "\n"}} {
		if _, err := w.to.Write([]byte(w.text)); err != nil {
			t.Fatal(err)
		}
	}
	if want := "b: first\na: one line\nb: second\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}
