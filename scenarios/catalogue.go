package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names lists the catalogue's scenario names (file names without .yaml).
func Names() []string {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil // an embed.FS root always reads
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Read returns the YAML of the named scenario.
func Read(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no scenario %q in the catalogue; it has: %s", name, strings.Join(Names(), ", "))
	}
	return b, nil
}
