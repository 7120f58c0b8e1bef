package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// exampleLines are the `faultline ...` lines of every command's Examples,
// by command path.
func exampleLines(c *cobra.Command) map[string][]string {
	out := map[string][]string{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, l := range strings.Split(c.Example, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "faultline ") {
				out[c.CommandPath()] = append(out[c.CommandPath()], l)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(c)
	return out
}

// splitWords splits a shell line into words: quotes group, a trailing #
// comment goes.
func splitWords(line string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case (r == '#' || r == '>' || r == '|') && !in:
			return words // a comment, or the shell's redirection or pipe
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestHelpExamples: every line of every command's Examples names a
// command that exists, with flags it has and values they take, and
// positional arguments it accepts; the read-only ones (list, describe,
// validate, version, lab releases, completion, init into a folder) run and
// succeed. A renamed flag or command, or a stale example, fails here.
func TestHelpExamples(t *testing.T) {
	// The files the examples name, in a folder of their own.
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	b, err := os.ReadFile(filepath.Join(repo, "scenarios", "power-off-worker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, "my-scenario.yaml", string(b))
	write(t, filepath.Join("scenarios", "power-off-worker.yaml"), string(b))
	root := newRootCommand()
	lines := exampleLines(root)
	if len(lines) < 8 {
		t.Fatalf("examples of %d commands found", len(lines))
	}
	runs := map[string]bool{"faultline list": true, "faultline describe": true, "faultline validate": true, "faultline version": true,
		"faultline lab releases": true, "faultline completion": true}
	n := 0
	for owner, examples := range lines {
		for _, ex := range examples {
			n++
			path := owner
			words := splitWords(ex)[1:]
			cmd, rest, err := newRootCommand().Find(words)
			if err != nil {
				t.Errorf("%s: example %q: %v", path, ex, err)
				continue
			}
			path = cmd.CommandPath() // an example may show the command to use next
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", path, ex, err)
				continue
			}
			if cmd.Args != nil {
				if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
					t.Errorf("%s: example %q: %v", path, ex, err)
				}
			}
			if !runs[path] || strings.Contains(ex, "<") {
				continue
			}
			var stdout, stderr bytes.Buffer
			if code := execute(words, &stdout, &stderr); code != 0 {
				t.Errorf("%s: example %q exits %d:\n%s%s", path, ex, code, stdout.String(), stderr.String())
			}
		}
	}
	t.Logf("%d examples of %d commands", n, len(lines))
}
