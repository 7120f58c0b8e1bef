package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The structured output formats every command with -o json also takes.
const (
	outputJSON = "json"
	outputYAML = "yaml"
)

// checkOutput refuses an --output value that is not one of formats.
func checkOutput(value string, formats ...string) error {
	if slices.Contains(formats, value) {
		return nil
	}
	return usageErr("--output %q: expected %s", value, orList(formats))
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// structured tells whether format is one printDoc writes.
func structured(format string) bool { return format == outputJSON || format == outputYAML }

// printDoc writes doc as indented JSON, or as YAML with the same field
// names (the JSON's, in YAML, as kubectl does).
func printDoc(w io.Writer, format string, doc any) error {
	if format == outputYAML {
		b, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
