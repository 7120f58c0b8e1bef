// Command schema prints the JSON Schema of faultline's scenario format,
// generated from the Go types of framework/scenario: field names from
// their yaml tags, descriptions from their doc comments, fault, probe and
// capability names from engine.Vocabulary and the providers' table. Every
// scalar also takes a ${name} parameter reference, as the loader does.
// hack/verify.sh checks that docs/scenario.schema.json is what it prints:
//
//	go run ./hack/schema > docs/scenario.schema.json
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

func main() {
	s, err := generate(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "schema:", err)
		os.Exit(1)
	}
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "schema:", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

type schema = map[string]any

// The ${name} reference a scalar may be instead of its value.
const refPattern = `^\$\{[A-Za-z][A-Za-z0-9._-]*\}$`

// durationPattern is a Go duration with units, as the loader takes it.
const durationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`

// generate is the schema of scenario.Scenario; root is the repository,
// whose sources give the descriptions.
func generate(root string) (schema, error) {
	docs, err := fieldDocs(filepath.Join(root, "framework/scenario"), filepath.Join(root, "providers"), filepath.Join(root, "providers/lab/labconfig"))
	if err != nil {
		return nil, err
	}
	g := &generator{docs: docs, enums: map[string][]string{
		"Inject.Fault":    sortedKeys(engine.Vocabulary.Faults),
		"Condition.Probe": sortedKeys(engine.Vocabulary.Probes),
	}}
	for _, c := range providers.Capabilities() {
		g.capabilities = append(g.capabilities, string(c))
	}
	s := g.of(reflect.TypeOf(scenario.Scenario{}), "")
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	s["$id"] = "https://faultline.dev/schemas/scenario-v1alpha1.json"
	s["title"] = "faultline Scenario (" + scenario.APIVersion + ")"
	props := s["properties"].(schema)
	props["apiVersion"] = schema{"type": "string", "enum": []string{scenario.APIVersion}}
	props["kind"] = schema{"type": "string", "enum": []string{scenario.Kind}}
	s["required"] = []string{"apiVersion", "kind", "metadata", "spec"}
	return s, nil
}

type generator struct {
	docs         map[string]string // Type.Field -> doc comment
	enums        map[string][]string
	capabilities []string
}

var durationType = reflect.TypeOf(scenario.Duration{})

// required fields, by Type. An inject's target is not: an upgrade of the
// management plane, or an object fault with cluster: management, has none
// (validation says which faults need one).
var required = map[string][]string{
	"Metadata": {"name"}, "Target": {"name", "select"}, "Step": {"name"},
	"Phase": {"name", "when"}, "Condition": {"probe"}, "Guard": {"name", "condition"},
	"Inject": {"fault"}, "WithinAssertion": {"phase", "budget"},
	"WindowAssertion": {"condition", "for"}, "CountAssertion": {"condition", "for"},
}

// of is t's schema; key is the Type.Field it is the value of.
func (g *generator) of(t reflect.Type, key string) schema {
	if t.Kind() == reflect.Pointer {
		return g.of(t.Elem(), key)
	}
	switch {
	case t == durationType:
		return orRef(schema{"type": "string", "pattern": durationPattern, "description": "a duration with units, such as 30s, 5m or 1h30m (at most 24h)"})
	case t == reflect.TypeOf(providers.Capability("")):
		return orRef(schema{"type": "string", "enum": g.capabilities})
	case t == reflect.TypeOf(scenario.Release{}):
		// A stack's name, or the struct (its versions).
		var names []string
		for _, st := range scenario.Stacks() {
			names = append(names, st.Name)
		}
		props := schema{}
		for _, f := range []string{"stack", "clusterAPI", "capv"} {
			props[f] = schema{"type": "string"}
		}
		return schema{"anyOf": []schema{
			{"type": "string", "enum": names},
			{"type": "object", "properties": props, "additionalProperties": false},
		}}
	}
	switch t.Kind() {
	case reflect.String:
		if e, ok := g.enums[key]; ok {
			return orRef(schema{"type": "string", "enum": e})
		}
		return schema{"type": "string"}
	case reflect.Bool:
		return orRef(schema{"type": "boolean"})
	case reflect.Int, reflect.Int64:
		return orRef(schema{"type": "integer"})
	case reflect.Slice:
		return schema{"type": "array", "items": g.of(t.Elem(), key)}
	case reflect.Map:
		return schema{"type": "object", "additionalProperties": g.of(t.Elem(), key)}
	case reflect.Struct:
		props := schema{}
		for i := range t.NumField() {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			fs := g.of(f.Type, t.Name()+"."+f.Name)
			if d := g.docs[t.Name()+"."+f.Name]; d != "" {
				fs["description"] = d
			}
			props[name] = fs
		}
		s := schema{"type": "object", "properties": props, "additionalProperties": false}
		if r := required[t.Name()]; r != nil {
			s["required"] = r
		}
		if t.Name() == "Step" {
			// Exactly one kind of step.
			var one []schema
			for _, k := range []string{"setup", "inject", "observe", "assert", "undo", "teardown"} {
				one = append(one, schema{"required": []string{k}})
			}
			s["oneOf"] = one
		}
		return s
	}
	panic(fmt.Sprintf("schema: no rule for %s", t))
}

// orRef is s, or a ${name} parameter reference.
func orRef(s schema) schema {
	return schema{"anyOf": []schema{s, {"type": "string", "pattern": refPattern}}}
}

// fieldDocs reads the doc comments of the struct fields in dirs' Go files
// (tests left out), by Type.Field.
func fieldDocs(dirs ...string) (map[string]string, error) {
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return false
				}
				for _, fld := range st.Fields.List {
					if fld.Doc == nil {
						continue
					}
					text := strings.Join(strings.Fields(fld.Doc.Text()), " ")
					for _, n := range fld.Names {
						out[ts.Name.Name+"."+n.Name] = text
					}
				}
				return false
			})
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
