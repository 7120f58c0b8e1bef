package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers/lab/management"
)

// Record is what a running lab leaves in the user's lab state folder
// (RecordsDir), one file per lab, keyed by its folder: who owns it, so
// that `faultline lab down` can tell a lab whose owner died (a run killed
// with SIGKILL, a crashed test) from one still in use by another process.
type Record struct {
	// Dir is the lab's folder.
	Dir string `json:"dir"`
	// PID and PIDStart identify the owner: its pid and its start time
	// (clock ticks after boot, /proc/PID/stat), so a reused pid is not
	// taken for it.
	PID      int    `json:"pid"`
	PIDStart uint64 `json:"pidStart"`
	// Command is the owner's command line, for people.
	Command string    `json:"command"`
	Created time.Time `json:"created"`
}

// OwnerAlive tells whether the process that started the lab still runs.
func (r Record) OwnerAlive() bool {
	start, err := management.ProcessStart(r.PID)
	return err == nil && start == r.PIDStart
}

// Name is how `lab down` names the lab: its folder's base name.
func (r Record) Name() string { return filepath.Base(r.Dir) }

// RecordsDir is the user's lab state folder ($XDG_CACHE_HOME or
// ~/.cache, then faultline/labs).
func RecordsDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the cache folder for lab records: %w", err)
	}
	return filepath.Join(dir, "faultline", "labs"), nil
}

// Records lists the labs recorded in RecordsDir, oldest first; a record
// that does not read as one is left out (ReadRecords lists those).
func Records() ([]Record, error) {
	out, _, err := ReadRecords()
	return out, err
}

// ReadRecords lists the labs recorded in RecordsDir, oldest first, and
// the record files that are not lab records (torn, edited, or not
// regular files), which block nothing: `lab down --stale` removes them.
func ReadRecords() (out []Record, unreadable []string, err error) {
	dir, err := RecordsDir()
	if err != nil {
		return nil, nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lab records: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := regularfile.Read(path, regularfile.Small)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile by its lab
		}
		var r Record
		if err != nil || json.Unmarshal(b, &r) != nil || r.Dir == "" || r.Name()+".json" != e.Name() {
			unreadable = append(unreadable, path)
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, unreadable, nil
}

// RemoveUnreadable removes a record file ReadRecords could not read.
func RemoveUnreadable(path string) error {
	dir, err := RecordsDir()
	if err != nil {
		return err
	}
	if filepath.Dir(path) != dir || !strings.HasSuffix(path, ".json") {
		return fmt.Errorf("%s is not a lab record in %s", path, dir)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// RemoveRecord removes r's file.
func RemoveRecord(r Record) error {
	dir, err := RecordsDir()
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, r.Name()+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// record writes the record of a lab in folder dir, owned by this process.
func record(dir string) (Record, error) {
	start, err := management.ProcessStart(os.Getpid())
	if err != nil {
		return Record{}, fmt.Errorf("lab record: %w", err)
	}
	args := os.Args
	if len(args) > 3 {
		args = args[:3]
	}
	r := Record{Dir: dir, PID: os.Getpid(), PIDStart: start, Command: strings.Join(args, " "), Created: time.Now()}
	states, err := RecordsDir()
	if err != nil {
		return r, err
	}
	if err := os.MkdirAll(states, 0o700); err != nil {
		return r, fmt.Errorf("lab record: %w", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(states, r.Name()+".json"), b, 0o600); err != nil {
		return r, fmt.Errorf("lab record: %w", err)
	}
	return r, nil
}
