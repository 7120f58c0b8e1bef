package engine

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultline-dev/faultline/providers"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// Journal operations.
const (
	OpInject = "inject"
	OpDone   = "done"
)

// Results of a done record.
const (
	ResultUndone = "undone"
	// ResultNone: the fault has no undo (a destroyed VM); nothing was
	// done at the end.
	ResultNone      = "none"
	ResultRetained  = "retained"
	ResultAbandoned = "abandoned"
	ResultFailed    = "undo-failed"
	// ResultNotApplied: the inject was refused before it changed
	// anything; there was nothing to undo.
	ResultNotApplied = "not-applied"
)

// JournalEntry is one line of a journal. An inject record is written and
// fsynced before its fault is applied; a done record closes it. Each line
// is sealed with an HMAC under the journal key (JournalKeyPath), so that
// recover can tell an entry faultline wrote from one edited since.
type JournalEntry struct {
	Time     time.Time             `json:"time"`
	Op       string                `json:"op"`
	FaultID  string                `json:"faultID"`
	Scenario string                `json:"scenario,omitempty"`
	Kind     string                `json:"kind,omitempty"`
	Target   *providers.Object     `json:"target,omitempty"`
	Undo     *UndoAction           `json:"undo,omitempty"`
	Provider providers.ProviderRef `json:"provider"`
	Result   string                `json:"result,omitempty"`
	Error    string                `json:"error,omitempty"`
	// Journal, Path, Seq and Prev bind the line to its journal (see
	// journalchain.go): the journal's random identity, the file it was
	// written to, its place (1 for the first line) and the MAC of the
	// line before it. The seal covers them.
	Journal string `json:"journal,omitempty"`
	Path    string `json:"path,omitempty"`
	Seq     int    `json:"seq,omitempty"`
	Prev    string `json:"prev,omitempty"`

	// Line is the entry's line in the journal it was read from.
	Line int `json:"-"`
	// raw is that line as read, MAC included.
	raw []byte
}

// Journal is an append-only, fsynced record of injected faults and their
// undos. It is what `faultline recover` reads after a crash.
type Journal struct {
	mu   sync.Mutex
	f    *os.File
	path string
	key  []byte
	// chain is where the journal's next line goes: its identity, the
	// last line's place and MAC, and where its head is recorded.
	chain chain
	// mirror, when set, is given the whole journal after each append
	// (SetMirror).
	mirror func(content []byte) error
}

// OpenJournal opens (creating it and its folder if needed) the journal at
// path for appending, sealing its entries with the journal key (made on
// first use). A journal already there (a run into a folder that holds
// one) is verified first, as recover would read it: a line edited, moved
// or cut off since faultline wrote it is refused (errors.Is
// ErrUntrustedJournal), for lines appended after it would hide the cut.
func OpenJournal(path string) (*Journal, error) {
	keyPath, err := JournalKeyPath()
	if err != nil {
		return nil, err
	}
	key, err := LoadJournalKey(keyPath, true)
	if err != nil {
		return nil, err
	}
	return openJournal(path, "", key, JournalHeads(keyPath), true)
}

// openJournal opens the journal at path for appending; its head is
// recorded in heads. An existing journal's chain goes on from its last
// line, once verified when verify is set (recover, which appends done
// lines, has read it through readTrusted already). origin, when set, is
// the path the journal's lines were written to, of which path is a copy
// (one fetched from a management cluster): its lines go on naming it.
func openJournal(path, origin string, key []byte, heads string, verify bool) (*Journal, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if origin == "" {
		origin = abs
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create journal folder: %w", err)
	}
	f, err := regularfile.OpenWrite(path, os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	// The writer holds the journal locked until it closes it, or dies:
	// recover leaves a journal alone while its run still runs. It is
	// opened, not followed, and locked before its chain is read.
	if err := lockJournal(f); err != nil {
		return nil, errors.Join(fmt.Errorf("journal %s: %w", path, err), f.Close())
	}
	if verify {
		if err := verifyForAppend(path, key, heads); err != nil {
			return nil, errors.Join(err, f.Close())
		}
	}
	c, err := chainFrom(abs, origin, heads, f)
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	// The file's directory entry must be durable too, or a crash right
	// after creation can lose the whole journal.
	if err := syncDir(dir); err != nil {
		return nil, errors.Join(fmt.Errorf("sync journal folder: %w", err), f.Close())
	}
	return &Journal{f: f, path: path, key: key, chain: c}, nil
}

// Path is where the journal is.
func (j *Journal) Path() string { return j.path }

// ID is the journal's identity, which each of its lines carries.
func (j *Journal) ID() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.chain.id
}

// SetMirror has each append, once on disk, also give the whole journal
// to mirror (a copy where other hosts can reach it): an append whose copy
// fails fails, so a fault is applied only once both hold it. Nil stops
// it.
func (j *Journal) SetMirror(mirror func(content []byte) error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mirror = mirror
}

// Content is the whole journal as written.
func (j *Journal) Content() ([]byte, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.content()
}

// content reads it back; a copy is a Secret, which holds no more than
// regularfile.Small (1 MiB).
func (j *Journal) content() ([]byte, error) {
	b, err := regularfile.Read(j.path, regularfile.Small)
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", j.path, err)
	}
	return b, nil
}

// Append writes e as one line and fsyncs it before returning.
func (j *Journal) Append(e JournalEntry) error {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Journal, e.Path, e.Seq, e.Prev = j.chain.id, j.chain.path, j.chain.seq+1, j.chain.mac
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode journal entry: %w", err)
	}
	line := seal(j.key, b)
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync journal %s: %w", j.path, err)
	}
	j.chain.seq, j.chain.mac = e.Seq, macOf(line)
	if err := j.chain.recordHead(); err != nil {
		return err
	}
	if j.mirror == nil {
		return nil
	}
	content, err := j.content()
	if err == nil {
		err = j.mirror(content)
	}
	if err != nil {
		return fmt.Errorf("copy journal %s: %w", j.path, err)
	}
	return nil
}

// Close closes the journal file, which lets go of its lock.
func (j *Journal) Close() error { return j.f.Close() }

// ErrJournalInUse marks a journal another live process writes: a run
// that still runs, or a recover of it.
var ErrJournalInUse = errors.New("written by a faultline process that still runs")

// lockJournal takes f's journal for this process (flock(2), exclusive,
// without waiting). The kernel lets go of it when the process ends, a
// kill -9 included.
func lockJournal(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrJournalInUse
	}
	return err
}

// journalInUse tells whether a live process holds the journal at path.
func journalInUse(path string) (bool, error) {
	f, err := regularfile.Open(path, regularfile.Journal)
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = lockJournal(f)
	if errors.Is(err, ErrJournalInUse) {
		return true, nil
	}
	return false, err
}

// ReadJournal reads every entry of the journal at path. A torn last line (a
// crash mid-write) is skipped: its fault was never applied, since the inject
// record is synced before the fault. readJournal says so.
func ReadJournal(path string) ([]JournalEntry, error) {
	entries, _, err := readJournal(path)
	return entries, err
}

// readJournal is ReadJournal that also returns the torn last line's
// problem, nil when there is none.
func readJournal(path string) ([]JournalEntry, error, error) {
	var entries []JournalEntry
	torn, err := scanJournal(path, func(e JournalEntry) error {
		entries = append(entries, e)
		return nil
	})
	return entries, torn, err
}

// scanJournal streams the entries of the journal at path to each, a line
// at a time: a journal is never held whole (recover keeps only what is
// pending). It returns the torn last line's problem, if any.
func scanJournal(path string, each func(JournalEntry) error) (torn error, err error) {
	f, err := regularfile.Open(path, regularfile.Journal)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if torn != nil {
			return nil, torn // a bad line that is not the last one
		}
		var e JournalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			torn = fmt.Errorf("journal %s:%d: not a journal entry: %w", path, line, err)
			continue
		}
		e.Line, e.raw = line, append([]byte(nil), sc.Bytes()...)
		if err := each(e); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	return torn, nil
}

// VerifyJournal checks that every entry read from the journal at path
// (ReadJournal) carries the MAC key gives it. The error (errors.Is
// ErrUntrustedJournal) names the first line that does not.
func VerifyJournal(path string, entries []JournalEntry, key []byte) error {
	for _, e := range entries {
		if err := verifySeal(path, e, key); err != nil {
			return err
		}
	}
	return nil
}

// verifySeal checks one entry's MAC.
func verifySeal(path string, e JournalEntry, key []byte) error {
	if _, ok := unseal(key, e.raw); !ok {
		return fmt.Errorf("%w: %s:%d: the entry was changed after faultline wrote it, or written with another journal key (another user or host); nothing was undone", ErrUntrustedJournal, path, e.Line)
	}
	return nil
}

// Pending returns the inject entries that have no done entry, in order.
func Pending(entries []JournalEntry) []JournalEntry {
	done := map[string]bool{}
	for _, e := range entries {
		if e.Op == OpDone {
			done[e.FaultID] = true
		}
	}
	var out []JournalEntry
	for _, e := range entries {
		if e.Op == OpInject && !done[e.FaultID] {
			out = append(out, e)
		}
	}
	return out
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// JournalName is the file name a run writes its journal under.
const JournalName = "journal.jsonl"

// FindJournals lists the journals of paths: a file is taken as it is; a
// folder is searched at any depth for regular files named JournalName (a
// single run with --artifacts writes DIR/journal.jsonl, a run of several
// DIR/run-TS/SCENARIO/journal.jsonl). Symbolic links and special files
// found in a folder are skipped: nothing there may make recover block or
// leave the folder. A path that does not exist is an error.
func FindJournals(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && d.Name() == JournalName {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("find journals under %s: %w", p, err)
		}
	}
	return out, nil
}
