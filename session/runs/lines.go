package runs

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
)

// SummaryLine is one scenario's line in a run's summary.
func SummaryLine(res *engine.Result) string {
	line := fmt.Sprintf("  %-8s %s (%s)", strings.ToUpper(string(res.Verdict)), res.Scenario, res.FinishedAt.Sub(res.StartedAt).Round(100*time.Millisecond))
	if res.Reason != "" {
		line += ": " + res.Reason
	}
	return line
}

// lockedWriter writes to w one Write at a time: the lines of items run
// side by side do not interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// prefixed begins each line written to w with prefix; a line is written
// once whole.
type prefixed struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	pending []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, b...)
	for {
		i := bytes.IndexByte(p.pending, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := io.WriteString(p.w, p.prefix+string(p.pending[:i+1])); err != nil {
			return len(b), err
		}
		p.pending = p.pending[i+1:]
	}
}
