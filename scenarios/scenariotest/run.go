package scenariotest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/scenarios"
)

// Run runs the catalogue scenario name on p with RunText. edit, when set,
// changes the scenario's text first (a broken variant) and must change
// something; sets override parameters.
func Run(ctx context.Context, t testing.TB, p providers.Provider, name string, edit func(string) string, sets map[string]string) *engine.Result {
	t.Helper()
	data, err := scenarios.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		changed := edit(string(data))
		if changed == string(data) {
			t.Fatalf("%s: the edit changes nothing", name)
		}
		data = []byte(changed)
	}
	return RunText(ctx, t, p, "scenarios/"+name+".yaml", data, sets)
}

// RunText runs the scenario in data (file names it in errors) on p with a
// journal in a test folder, logs its phases and assertions, and fails the
// test if a fault is still pending in the journal afterwards.
func RunText(ctx context.Context, t testing.TB, p providers.Provider, file string, data []byte, sets map[string]string) *engine.Result {
	t.Helper()
	name := filepath.Base(file)
	sc, err := scenario.Parse(file, data, sets, engine.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	j, err := engine.OpenJournal(filepath.Join(t.TempDir(), "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, err := engine.Run(ctx, engine.RunInput{Scenario: sc, Provider: p, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range res.Phases {
		if ph.SinceAnchor != nil {
			t.Logf("%s: phase %s reached %s after %s", name, ph.Name, ph.SinceAnchor, ph.From)
		} else {
			t.Logf("%s: phase %s not reached: %s", name, ph.Name, ph.Message)
		}
	}
	for _, a := range res.Assertions {
		t.Logf("%s: assertion %s ok=%t: %s", name, a.Name, a.OK, a.Message)
	}
	entries, err := engine.ReadJournal(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	if pending := engine.Pending(entries); len(pending) > 0 {
		t.Errorf("%s: %d faults still pending in the journal after the run", name, len(pending))
	}
	return res
}
