package scenario

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// maxDepth bounds recursion through nested or aliased nodes, so a hostile
// file cannot exhaust the stack; maxNodes bounds the nodes decoded, so
// aliases of aliases (a "billion laughs") cannot take exponential time.
const (
	maxDepth = 64
	maxNodes = 20000
)

var (
	durationType = reflect.TypeOf(Duration{})
	releaseType  = reflect.TypeOf(Release{})
)

// decoder maps a YAML node tree onto the scenario types, strictly: unknown
// fields, wrong types and bare-number durations are errors that carry the
// file position of the offending node.
type decoder struct {
	file      string
	errs      []FieldError
	positions map[string]Pos
	nodes     int
	// reported holds nodes already blamed (an unknown ${param}), so they
	// are not blamed again for the text left in them.
	reported map[*yaml.Node]bool
	// limit is the node budget's error once it is spent.
	limit *FieldError
}

func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) {
	if d.reported[n] {
		return
	}
	d.errs = append(d.errs, FieldError{File: d.file, Pos: Pos{n.Line, n.Column}, Field: field, Msg: fmt.Sprintf(format, shown(args)...)})
}

func (d *decoder) decode(n *yaml.Node, path string, v reflect.Value, depth int) {
	if depth > maxDepth {
		d.fail(n, path, "nested deeper than %d levels", maxDepth)
		return
	}
	d.nodes++
	if d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.limit = &FieldError{File: d.file, Pos: Pos{n.Line, n.Column}, Field: path, Msg: fmt.Sprintf("more than %d nodes once aliases are expanded; a scenario is expected to be a page of YAML", maxNodes)}
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.fail(n, path, "alias to nothing")
			return
		}
		d.decode(n.Alias, path, v, depth+1)
		return
	}
	d.positions[path] = Pos{n.Line, n.Column}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // an explicit null leaves the zero value
	}
	if v.Type() == durationType {
		d.decodeDuration(n, path, v)
		return
	}
	if v.Type() == releaseType && n.Kind == yaml.ScalarNode {
		// `release: v1.12` names a stack.
		v.Set(reflect.ValueOf(Release{Stack: n.Value}))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.decode(n, path, elem.Elem(), depth+1)
		v.Set(elem)
	case reflect.Struct:
		d.decodeStruct(n, path, v, depth)
	case reflect.Map:
		d.decodeMap(n, path, v, depth)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "expected a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, fmt.Sprintf("%s[%d]", path, i), s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "expected a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || err != nil {
			d.fail(n, path, "expected true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil {
			d.fail(n, path, "expected a whole number, got %s", describe(n))
			return
		}
		if v.Kind() == reflect.Int && (i > 1<<31-1 || i < -(1<<31)) {
			d.fail(n, path, "number %s is out of range", n.Value)
			return
		}
		v.SetInt(i)
	default:
		d.fail(n, path, "cannot decode into %s", v.Type())
	}
}

func (d *decoder) decodeDuration(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "expected a duration such as 30s or 5m, got %s", describe(n))
		return
	}
	if tag := n.ShortTag(); tag == "!!int" || tag == "!!float" {
		d.fail(n, path, "bare number %s is not a duration; write it with a unit, such as %ss", n.Value, n.Value)
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.fail(n, path, "%q is not a duration; expected a number with a unit such as 30s, 5m or 1h30m", n.Value)
		return
	}
	if dur < 0 {
		d.fail(n, path, "duration %s is negative; expected zero or more", n.Value)
		return
	}
	if dur > MaxDuration {
		d.fail(n, path, "duration %s is longer than %s, the longest a scenario waits", n.Value, MaxDuration)
		return
	}
	v.Set(reflect.ValueOf(Duration{Duration: dur}))
}

func (d *decoder) decodeStruct(n *yaml.Node, path string, v reflect.Value, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	fields := map[string]int{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if name != "" && name != "-" {
			fields[name] = i
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fieldPath := join(path, k.Value)
		idx, ok := fields[k.Value]
		if !ok {
			d.fail(k, fieldPath, "unknown field %q; expected one of %s%s", k.Value, own(strings.Join(sortedKeys(fields), ", ")), own(didYouMean(k.Value, sortedKeys(fields))))
			continue
		}
		if seen[k.Value] {
			d.fail(k, fieldPath, "field %q is set twice", k.Value)
			continue
		}
		seen[k.Value] = true
		d.decode(val, fieldPath, v.Field(idx), depth+1)
		// Point errors about a field at its key, where people look.
		d.positions[fieldPath] = Pos{k.Line, k.Column}
	}
}

func (d *decoder) decodeMap(n *yaml.Node, path string, v reflect.Value, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "keys must be strings, got %s", describe(k))
			continue
		}
		keyPath := join(path, k.Value)
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.fail(k, keyPath, "key %q is set twice", k.Value)
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if elem.Kind() == reflect.String && val.Kind == yaml.ScalarNode {
			// Free-form values (labels, params, args) accept any scalar.
			elem.SetString(val.Value)
			d.positions[keyPath] = Pos{k.Line, k.Column}
		} else {
			d.decode(val, keyPath, elem, depth+1)
		}
		m.SetMapIndex(reflect.ValueOf(k.Value), elem)
	}
	v.Set(m)
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "an unexpected node"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
