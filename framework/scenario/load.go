package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	goccyyaml "github.com/goccy/go-yaml"
	goccyparser "github.com/goccy/go-yaml/parser"
	"go.yaml.in/yaml/v3"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// maxScenarioBytes bounds what Load reads; a scenario is a page of YAML.
const maxScenarioBytes = 1 << 20

var (
	paramRef    = regexp.MustCompile(`\$\{([^}]*)\}`)
	paramName   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// Load reads, substitutes parameters in and validates the scenario in path.
// overrides set parameters by name, as --set name=value does; vocab is
// every fault and probe the scenario may name (engine.Vocabulary). Every
// problem is reported in one *ValidationError.
func Load(path string, overrides map[string]string, vocab Vocabulary) (*Scenario, error) {
	f, err := regularfile.Open(path, maxScenarioBytes)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScenarioBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read scenario %s: %w", path, err)
	}
	return Parse(path, data, overrides, vocab)
}

// Parse is Load for a scenario already in memory; name is used in messages.
func Parse(name string, data []byte, overrides map[string]string, vocab Vocabulary) (*Scenario, error) {
	fail := func(line int, field, msg string) error {
		return &ValidationError{Errors: []FieldError{{File: name, Pos: Pos{Line: line}, Field: field, Msg: msg}}}
	}
	if len(data) > maxScenarioBytes {
		return nil, fail(0, "", fmt.Sprintf("file is larger than %d bytes; a scenario is expected to be a page of YAML", maxScenarioBytes))
	}
	if pos, r, ok := controlChar(data); ok {
		what := fmt.Sprintf("character %U: a scenario is YAML text, and YAML allows no control characters but tab and line breaks", r)
		if r == utf8.RuneError {
			what = "bytes that are not UTF-8: a scenario is YAML text"
		}
		return nil, &ValidationError{Errors: []FieldError{{File: name, Pos: pos, Msg: what + " (is this a binary file?)"}}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fail(0, "", "file is empty; expected a Scenario")
		}
		return nil, yamlError(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fail(extra.Line, "", "a second YAML document; expected one Scenario per file")
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(name, data, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fail(doc.Line, "", "expected a mapping with apiVersion, kind, metadata and spec")
	}
	root := doc.Content[0]

	d := &decoder{file: name, positions: map[string]Pos{}, reported: map[*yaml.Node]bool{}}
	params, paramsNode := d.parameters(root, overrides)
	d.substitute(root, paramsNode, params, "", 0)

	s := &Scenario{Source: name, Text: data}
	d.decode(root, "", reflect.ValueOf(s).Elem(), 0)
	if d.limit != nil {
		// What was left undecoded past the limit would be blamed for
		// every field it did not fill: the limit is the one problem.
		return nil, &ValidationError{Errors: []FieldError{*d.limit}}
	}
	s.positions = d.positions
	// Every problem in one pass: the semantic checks run on what decoded
	// too, less what they would say of a field that did not decode (it is
	// left zero) or of what is under it.
	errs := d.errs
	for _, e := range validate(s, vocab) {
		if !underDecodeError(e.Field, d.errs) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		sortFieldErrors(errs)
		return nil, &ValidationError{Errors: errs}
	}
	return s, nil
}

// underDecodeError tells whether field is, or is under, a field of errs.
func underDecodeError(field string, errs []FieldError) bool {
	for _, e := range errs {
		if e.Field != "" && (field == e.Field || strings.HasPrefix(field, e.Field+".") || strings.HasPrefix(field, e.Field+"[")) {
			return true
		}
	}
	return false
}

// parameters returns the declared parameters with overrides applied, and the
// node that declares them (which substitution must leave alone).
func (d *decoder) parameters(root *yaml.Node, overrides map[string]string) (map[string]string, *yaml.Node) {
	params := map[string]string{}
	spec := mappingValue(root, "spec")
	node := mappingValue(spec, "parameters")
	if node != nil && node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			if !paramName.MatchString(k.Value) {
				d.fail(k, "spec.parameters."+k.Value, "parameter names start with a letter and hold letters, digits, '.', '_' or '-'")
				continue
			}
			if v.Kind != yaml.ScalarNode {
				d.fail(v, "spec.parameters."+k.Value, "expected a scalar default value, got %s", describe(v))
				continue
			}
			if paramRef.MatchString(v.Value) {
				// Values are not substituted: a reference would be left
				// as text (and two that refer to each other never end).
				d.fail(v, "spec.parameters."+k.Value, "a parameter's value may not refer to a parameter (%s); give the value itself", v.Value)
				continue
			}
			params[k.Value] = v.Value
		}
	}
	for _, k := range sortedKeys(overrides) {
		if _, ok := params[k]; !ok {
			declared := strings.Join(sortedKeys(params), ", ")
			if declared == "" {
				declared = "none"
			}
			d.errs = append(d.errs, FieldError{File: d.file, Field: "--set " + k, Msg: "the scenario declares no such parameter; declared: " + declared})
			continue
		}
		if paramRef.MatchString(overrides[k]) {
			d.errs = append(d.errs, FieldError{File: d.file, Field: "--set " + k, Msg: "a parameter's value may not refer to a parameter; give the value itself"})
			continue
		}
		params[k] = overrides[k]
	}
	return params, node
}

// substitute replaces ${name} in every scalar. A scalar that is exactly one
// reference takes the parameter's type (so ${budget} can be a duration and
// ${count} a number); a reference inside text is spliced as text.
func (d *decoder) substitute(n, skip *yaml.Node, params map[string]string, path string, depth int) {
	if n == nil || n == skip || depth > maxDepth {
		return
	}
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		whole := paramRef.FindStringSubmatchIndex(n.Value)
		exact := whole != nil && whole[0] == 0 && whole[1] == len(n.Value)
		n.Value = paramRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			key := ref[2 : len(ref)-1]
			if strings.HasPrefix(key, "target.") {
				// A target's objects, known at run time (targetref.go).
				return ref
			}
			v, ok := params[key]
			if !ok {
				d.fail(n, path, "unknown parameter %q; declare it under spec.parameters", key)
				d.reported[n] = true
				return ref
			}
			return v
		})
		if exact && n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 {
			n.Tag = "" // resolve the type from the substituted value
		}
		return
	}
	for i, c := range n.Content {
		childPath := path
		switch n.Kind {
		case yaml.MappingNode:
			if i%2 == 0 {
				continue // keys are never substituted
			}
			childPath = join(path, n.Content[i-1].Value)
		case yaml.SequenceNode:
			childPath = fmt.Sprintf("%s[%d]", path, i)
		}
		d.substitute(c, skip, params, childPath, depth+1)
	}
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// controlChar finds the first character YAML does not allow in a file
// (C0 controls but tab, LF and CR; DEL; C1 controls but NEL), or bytes that
// are not UTF-8, and its position.
func controlChar(data []byte) (Pos, rune, bool) {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1,
			r < 0x20 && r != '\t' && r != '\n' && r != '\r',
			r == 0x7f, r >= 0x80 && r <= 0x9f && r != 0x85:
			return Pos{Line: line, Column: col}, r, true
		case r == '\n':
			line, col = line+1, 1
		default:
			col++
		}
		i += size
	}
	return Pos{}, 0, false
}

// maxSecondOpinionDepth bounds the brackets open at once in a file that
// goccy/go-yaml is asked about: its parser takes time and memory that grow
// with the square of the nesting (20 000 levels: a second, 100 000: 50 s
// and 15 GB), where a scenario nests a handful.
const maxSecondOpinionDepth = 100

// bracketDepth is the most flow brackets ('[' and '{', less those closed)
// open at once in data, counting those in strings and comments too: an
// upper bound of the file's flow nesting, found in one pass.
func bracketDepth(data []byte) int {
	depth, most := 0, 0
	for _, b := range data {
		switch b {
		case '[', '{':
			depth++
			most = max(most, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return most
}

// goccySyntaxError is goccy/go-yaml's syntax error for data, nil when it
// finds none (or, as a second opinion only, fails in any other way, or is
// not asked: data nests deeper than maxSecondOpinionDepth).
func goccySyntaxError(data []byte) (se *goccyyaml.SyntaxError) {
	if bracketDepth(data) > maxSecondOpinionDepth {
		return nil
	}
	defer func() {
		if recover() != nil {
			se = nil
		}
	}()
	if _, err := goccyparser.ParseBytes(data, 0); errors.As(err, &se) && se.Token != nil {
		return se
	}
	return nil
}

// yamlError places a syntax error. yaml.v3 says only a line, sometimes
// one early; goccy/go-yaml's parser gives the line and column of the token
// at fault, so its word is taken when it finds the error too.
func yamlError(name string, data []byte, err error) error {
	if se := goccySyntaxError(data); se != nil {
		p := se.Token.Position
		return &ValidationError{Errors: []FieldError{{File: name, Pos: Pos{Line: p.Line, Column: p.Column}, Msg: "invalid YAML: " + strings.ReplaceAll(se.Message, "\t", `\t`)}}}
	}
	msg := err.Error()
	line := 0
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			line = n
		}
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	// The YAML parser counts some lines from 0 and some from 1, so the line
	// can be one early; say so rather than point with false precision.
	return &ValidationError{Errors: []FieldError{{File: name, Pos: Pos{Line: line}, Msg: "invalid YAML on this line or the next: " + msg}}}
}
