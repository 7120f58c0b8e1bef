package scenario

import (
	"fmt"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// Pos is a position in a scenario file; Line and Column start at 1.
type Pos struct {
	Line   int
	Column int
}

// FieldError is one problem with one field of a scenario file.
type FieldError struct {
	File  string
	Pos   Pos
	Field string
	Msg   string
}

func (e FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	switch {
	case e.Pos.Line > 0 && e.Pos.Column > 0:
		fmt.Fprintf(&b, ":%d:%d", e.Pos.Line, e.Pos.Column)
	case e.Pos.Line > 0:
		fmt.Fprintf(&b, ":%d", e.Pos.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ValidationError holds every problem found in a scenario file, in file
// order, so a user fixes them in one pass.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// shown cuts the string arguments of a message (labconfig.Shown).
func shown(args []any) []any { return labconfig.Shown(args) }

// own is faultline's own text in a message (the list of what a field
// expects): shown cuts what is repeated from the file, never this.
type own string

// Where is "FILE:LINE" of a field of the scenario file (its path, such as
// spec.targets[0]), or of its nearest parent recorded; the file alone for
// a scenario built in memory.
func (s *Scenario) Where(path string) string {
	for p := path; ; {
		if pos, ok := s.positions[p]; ok {
			return fmt.Sprintf("%s:%d", s.Source, pos.Line)
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return s.Source
		}
		p = p[:i]
	}
}

func list(set map[string]bool) string {
	if len(set) == 0 {
		return "none"
	}
	return strings.Join(sortedKeys(set), ", ")
}

func sortFieldErrors(errs []FieldError) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].Pos, errs[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}
