package artifacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers"
)

// EventsFile holds the Events of a run's window, as the report shows them.
const EventsFile = "events.json"

// maxEvents bounds what a run keeps: the newest, when there are more.
const maxEvents = 300

// RunEvent is one Event of a run's window, as the report shows it.
type RunEvent struct {
	Time    string `json:"time"`
	Cluster string `json:"cluster"`
	Object  string `json:"object"`
	Type    string `json:"type,omitempty"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Count   int64  `json:"count,omitempty"`
}

// WriteEvents writes dir's events.json: the Events of the management
// cluster (in scope's namespace) and of scope's workload cluster last seen
// at or after since, oldest first, redacted as the dumps are. It is written
// on a pass too, so the report says what the cluster did. A cluster the
// provider cannot list is left out.
func WriteEvents(ctx context.Context, o providers.Objects, scope providers.Object, dir string, since time.Time) error {
	var all []RunEvent
	var errs []error
	for _, cluster := range []string{"management", "workload"} {
		ref := providers.ObjectRef{Cluster: cluster, APIVersion: "v1", Kind: "Event"}
		if cluster == "management" {
			ref.Namespace = scope.Attributes[providers.AttrNamespace]
		}
		events, err := o.ListObjects(ctx, scope, ref)
		if errors.Is(err, providers.ErrNotFound) || errors.Is(err, providers.ErrUnsupported) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s cluster's Events: %w", cluster, err))
			continue
		}
		for _, e := range eventsSince(events, since) {
			Redact(e)
			all = append(all, runEvent(cluster, e))
		}
	}
	if len(all) > maxEvents {
		all = all[len(all)-maxEvents:]
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return errors.Join(append(errs, writeSynced(filepath.Join(dir, EventsFile), append(b, '\n')))...)
}

func runEvent(cluster string, e map[string]any) RunEvent {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	obj, _ := e["involvedObject"].(map[string]any)
	re := RunEvent{Cluster: cluster, Type: str(e, "type"), Reason: str(e, "reason"), Message: str(e, "message")}
	if obj != nil {
		re.Object = str(obj, "kind") + "/" + str(obj, "name")
	}
	for _, f := range []string{"lastTimestamp", "eventTime", "firstTimestamp"} {
		if t := str(e, f); t != "" {
			re.Time = t
			break
		}
	}
	switch n := e["count"].(type) {
	case int64:
		re.Count = n
	case float64:
		re.Count = int64(n)
	}
	return re
}

// readEvents reads dir's events.json; a folder without one has none.
func readEvents(dir string) ([]RunEvent, error) {
	b, err := regularfile.Read(filepath.Join(dir, EventsFile), MaxResultBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []RunEvent
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, EventsFile), err)
	}
	return out, nil
}
