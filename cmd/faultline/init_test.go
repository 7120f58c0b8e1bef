package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// faultline init writes a scenario that validates and runs as it is; it
// does not overwrite one without --force, and refuses a name that is not
// a DNS label.
func TestInit(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	if code := execute([]string{"init", "my-drill"}, &out, &errOut); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errOut.String())
	}
	b, err := os.ReadFile("my-drill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# yaml-language-server: $schema=") || !strings.Contains(string(b), "name: my-drill\n") {
		t.Errorf("my-drill.yaml:\n%s", b)
	}
	out.Reset()
	if code := execute([]string{"validate", "my-drill.yaml"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "my-drill.yaml: ok (scenario my-drill, 3 steps)") {
		t.Errorf("validate: exit %d: %s %s", code, out.String(), errOut.String())
	}
	for args, want := range map[string]string{
		"init my-drill":         "my-drill.yaml exists: pass --force to overwrite it",
		"init My_Drill":         `scenario name "My_Drill": a lowercase RFC 1123 label`,
		"init my-drill --force": "",
	} {
		errOut.Reset()
		code := execute(strings.Fields(args), &out, &errOut)
		if (want == "" && code != 0) || (want != "" && (code != 2 || !strings.Contains(errOut.String(), want))) {
			t.Errorf("%s: exit %d, stderr %q; want %q", args, code, errOut.String(), want)
		}
	}
}
