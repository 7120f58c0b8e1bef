package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/regularfile"
)

// File names inside a run folder.
const (
	ResultFile   = "result.json"
	TimelineFile = "timeline.jsonl"
	JournalFile  = engine.JournalName
	// ScenarioFile is the scenario file as the run read it.
	ScenarioFile = "scenario.yaml"
	// QueuesFile is, on the lab, what the management plane's controllers'
	// work queues did during the run (management.QueueUse).
	QueuesFile = "queues.json"
)

// EnvArtifacts overrides the artifacts root, as in Cluster API's e2e suites.
const EnvArtifacts = "ARTIFACTS"

// DefaultRoot is the artifacts root when $ARTIFACTS is unset.
const DefaultRoot = "_artifacts"

// Root is $ARTIFACTS, or DefaultRoot.
func Root() string {
	if r := os.Getenv(EnvArtifacts); r != "" {
		return r
	}
	return DefaultRoot
}

// RunDir is the default folder of one run: <root>/<scenario>-<timestamp>.
func RunDir(scenario string, at time.Time) string {
	return filepath.Join(Root(), scenario+"-"+at.UTC().Format("20060102-150405.000"))
}

// Run is an open run folder.
type Run struct {
	dir      string
	timeline *os.File
}

// Open creates the run folder and its timeline file.
func Open(dir string) (*Run, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create artifacts folder: %w", err)
	}
	f, err := regularfile.OpenWrite(filepath.Join(dir, TimelineFile), os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("create timeline: %w", err)
	}
	return &Run{dir: dir, timeline: f}, nil
}

// Dir is the run folder.
func (r *Run) Dir() string { return r.dir }

// Timeline is the file the run's timeline is written to as it happens.
func (r *Run) Timeline() *os.File { return r.timeline }

// WriteResult writes result.json atomically (write, sync, rename).
func (r *Run) WriteResult(res *engine.Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	tmp := filepath.Join(r.dir, "."+ResultFile+".tmp")
	if err := writeSynced(tmp, append(b, '\n')); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(r.dir, ResultFile)); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// WriteReports writes junit.xml (one case, this run) and report.html,
// linking the dumps (paths relative to the run folder), showing each phase
// against its history (nil: none) and the folder's events.json.
func (r *Run) WriteReports(res *engine.Result, dumps []string, history map[string]PhaseStats) error {
	var junit, report bytes.Buffer
	if err := WriteJUnit(&junit, ResultsJUnit([]*engine.Result{res})); err != nil {
		return fmt.Errorf("write %s: %w", JUnitFile, err)
	}
	events, err := readEvents(r.dir)
	if err != nil {
		return err
	}
	if err := writeReport(&report, res, dumps, history, events); err != nil {
		return fmt.Errorf("write %s: %w", ReportFile, err)
	}
	for name, b := range map[string][]byte{JUnitFile: junit.Bytes(), ReportFile: report.Bytes()} {
		if err := writeSynced(filepath.Join(r.dir, name), b); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// Close closes the timeline file.
func (r *Run) Close() error { return r.timeline.Close() }

func writeSynced(path string, b []byte) error {
	f, err := regularfile.Create(path, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// MaxResultBytes bounds a result.json or events.json faultline reads; a
// run's is tens of kilobytes.
const MaxResultBytes = 64 << 20

// ReadResult reads the result.json of run folder dir.
func ReadResult(dir string) (*engine.Result, error) {
	path := filepath.Join(dir, ResultFile)
	b, err := regularfile.Read(path, MaxResultBytes)
	if err != nil {
		return nil, err
	}
	var res engine.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}
