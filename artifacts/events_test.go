package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// A run keeps the Events of its window (not the older ones), oldest first,
// redacted, and its report shows them on a pass.
func TestRunEventsInReport(t *testing.T) {
	p := fake.New("vm-a")
	started := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	event := func(name, at, reason, msg string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name}, "lastTimestamp": at, "reason": reason, "message": msg, "type": "Normal",
			"involvedObject": map[string]any{"kind": "MachineSet", "name": "lab-md-0"}, "count": int64(1)}
	}
	p.SetObject(providers.ObjectRef{Cluster: "management", APIVersion: "v1", Kind: "Event", Namespace: "default", Name: "new"},
		event("new", "2026-11-23T10:00:09Z", "SuccessfulCreate", `Created Machine "lab-md-0-x" from https://admin:hunter2@vc.example.com/sdk`))
	p.SetObject(providers.ObjectRef{Cluster: "management", APIVersion: "v1", Kind: "Event", Namespace: "default", Name: "old"},
		event("old", "2026-11-23T09:00:00Z", "Old", "before the run"))
	scope := providers.Object{Kind: "Machine", Name: "m", Attributes: map[providers.Attribute]string{providers.AttrNamespace: "default"}}
	dir := t.TempDir()
	if err := WriteEvents(context.Background(), p, scope, dir, started); err != nil {
		t.Fatal(err)
	}
	run, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	res := failedRun()
	if err := run.WriteReports(res, nil, nil); err != nil {
		t.Fatal(err)
	}
	events, err := readEvents(dir)
	if err != nil || len(events) != 1 || events[0].Reason != "SuccessfulCreate" || strings.Contains(events[0].Message, "hunter2") {
		t.Fatalf("events %+v (%v): want the one of the run's window, redacted", events, err)
	}
	html := readFile(t, dir, ReportFile)
	if !strings.Contains(html, "<h2>Events during the run</h2>") || !strings.Contains(html, "<td>MachineSet/lab-md-0</td><td>SuccessfulCreate</td>") {
		t.Errorf("report lacks the run's Events")
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
