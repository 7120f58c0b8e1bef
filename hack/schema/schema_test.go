package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
)

// docsSchema is the committed schema, which must be what generate makes.
func docsSchema(t *testing.T) *validate.SchemaValidator {
	t.Helper()
	committed, err := os.ReadFile("../../docs/scenario.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(committed), fresh) {
		t.Fatal("docs/scenario.schema.json is stale: run go run ./hack/schema > docs/scenario.schema.json")
	}
	var sch spec.Schema
	if err := json.Unmarshal(committed, &sch); err != nil {
		t.Fatal(err)
	}
	return validate.NewSchemaValidator(&sch, nil, "", strfmt.Default)
}

func schemaErrors(t *testing.T, v *validate.SchemaValidator, src []byte) []error {
	t.Helper()
	j, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	return v.Validate(doc).Errors
}

// Every catalogue scenario is valid against the schema; what the schema
// can see of a broken file (a field, a type, a name, a duration), it
// rejects as faultline validate does.
func TestSchema(t *testing.T) {
	v := docsSchema(t)
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("catalogue: %v", err)
	}
	var valid []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if errs := schemaErrors(t, v, b); len(errs) > 0 {
			t.Errorf("%s: %v", f, errs)
		}
		if strings.HasSuffix(f, "/vm-power-cycle.yaml") {
			valid = b
		}
	}
	for name, edit := range map[string][2]string{
		"unknown field":       {"  pollInterval:", "  pollIntervall:"},
		"wrong type":          {"name: victim", "name: [victim]"},
		"bare number timeout": {"timeout: 5m", "timeout: 60"},
		"unknown fault":       {"fault: vm.power-off", "fault: vm.melt"},
		"unknown probe":       {"probe: vm-powered-on", "probe: vm-powered"},
		"unknown capability":  {"requires: [VMPower]", "requires: [Teleport]"},
		"wrong apiVersion":    {"faultline.dev/v1alpha1", "faultline.dev/v2"},
		"two kinds of step":   {"      inject:\n", "      undo: {all: true}\n      inject:\n"},
		"not a duration":      {"timeout: 5m", "timeout: soon"},
		"count not a number":  {"      count: 1", "      count: one"},
	} {
		src := strings.Replace(string(valid), edit[0], edit[1], 1)
		if src == string(valid) {
			t.Fatalf("%s: the edit changes nothing", name)
		}
		if _, err := scenario.Parse("t.yaml", []byte(src), nil, engine.Vocabulary); err == nil {
			t.Errorf("%s: faultline validate accepts it", name)
		}
		if errs := schemaErrors(t, v, []byte(src)); len(errs) == 0 {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}
