package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Every command with -o json also takes -o yaml, with the same fields, and
// any other format is refused naming the ones it takes.
func TestOutputFormats(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"list"}, {"validate", catalogueScenario}} {
		var asJSON, asYAML, errOut bytes.Buffer
		if code := execute(append(args, "-o", "json"), &asJSON, &errOut); code != 0 {
			t.Fatalf("%v -o json: exit %d: %s", args, code, errOut.String())
		}
		if code := execute(append(args, "-o", "yaml"), &asYAML, &errOut); code != 0 {
			t.Fatalf("%v -o yaml: exit %d: %s", args, code, errOut.String())
		}
		var fromJSON, fromYAML any
		if err := json.Unmarshal(asJSON.Bytes(), &fromJSON); err != nil {
			t.Fatalf("%v -o json: %v", args, err)
		}
		if err := yaml.Unmarshal(asYAML.Bytes(), &fromYAML); err != nil {
			t.Fatalf("%v -o yaml: %v", args, err)
		}
		j1, err1 := json.Marshal(fromJSON)
		j2, err2 := json.Marshal(fromYAML)
		if err1 != nil || err2 != nil || !bytes.Equal(j1, j2) {
			t.Errorf("%v: -o yaml holds other fields than -o json:\n%s\n%s", args, j1, j2)
		}
		var out bytes.Buffer
		errOut.Reset()
		if code := execute(append(args, "-o", "xml"), &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), `--output "xml": expected text, `) || !strings.Contains(errOut.String(), "json or yaml") {
			t.Errorf("%v -o xml: exit %d: %s", args, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := execute([]string{"--version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "faultline ") {
		t.Errorf("--version: exit %d: %q %s", code, out.String(), errOut.String())
	}
	// -v is the verbosity where it exists (run, kind up), never the
	// version.
	out.Reset()
	errOut.Reset()
	if code := execute([]string{"-v"}, &out, &errOut); code != exitUsage || strings.HasPrefix(out.String(), "faultline ") {
		t.Errorf("-v at the root: exit %d: %q %s; want it refused, not the version", code, out.String(), errOut.String())
	}
}
