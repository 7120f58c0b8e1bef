package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/providers"
)

// ErrProviderGone is what RecoverInput.Reconnect returns (wrapped) for a
// provider that died with the run that used it (the embedded lab): there
// is nothing left to undo, and the entry is closed as abandoned.
var ErrProviderGone = errors.New("the provider died with the run")

// RecoverInput is the journals to replay after a crash, and how to reach
// their providers again.
type RecoverInput struct {
	// Journals are the journal files to read; each is read whole before
	// anything is undone.
	Journals []string
	// Reconnect returns the provider a pending entry's fault went through
	// (from e.Provider), or an error wrapping ErrProviderGone.
	Reconnect func(ctx context.Context, e JournalEntry) (providers.Provider, error)
	// Check, when set, is asked about every pending entry before anything
	// is undone: an error (a target not allowed, an identity that does
	// not match) refuses the whole recovery, naming the entry's line.
	Check func(e JournalEntry) error
	// Key is the journal key the entries must be sealed with; nil reads
	// the one at JournalKeyPath.
	Key []byte
	// Report, when set, is told each outcome as it happens.
	Report func(Recovered)
	// Heads is the folder of journal heads the journals' ends are checked
	// against; "" is the one beside the key at JournalKeyPath.
	Heads string
	// Force names entries, as FILE:LINE, to undo although their journal's
	// chain does not verify (a journal moved since it was written): of
	// such a journal only those are undone. A MAC that does not verify is
	// never forced.
	Force []string
	// Note, when set, is told what the user should know that stops
	// nothing: a torn last line, a journal whose end cannot be checked.
	Note func(string)
	// Origins maps a journal that is a copy (one fetched from a
	// management cluster) to the path its lines were written to, where
	// its chain places them.
	Origins map[string]string
}

// Recovered is what became of one pending fault.
type Recovered struct {
	Journal string
	Entry   JournalEntry
	// Result is ResultUndone or ResultAbandoned; empty when Err is set.
	Result string
	// Why says why an abandoned fault needed no undo.
	Why string
	// Err is why the fault could not be undone, or undone but not
	// recorded; the entry then stays pending.
	Err error
}

// RecoverSummary counts what Recover did.
type RecoverSummary struct {
	Pending, Failed int
	// Skipped counts the journals left alone: their runs still run.
	Skipped int
	// Refused counts the journals not trusted or not readable: nothing
	// of them was undone.
	Refused int
}

// withDefaults fills in what in leaves out: the user's journal key and
// heads, and callbacks that do nothing.
func (in RecoverInput) withDefaults() (RecoverInput, error) {
	if in.Key == nil || in.Heads == "" {
		path, err := JournalKeyPath()
		if err != nil {
			return in, err
		}
		if in.Heads == "" {
			in.Heads = JournalHeads(path)
		}
		if in.Key == nil {
			if in.Key, err = LoadJournalKey(path, false); err != nil {
				return in, fmt.Errorf("%w: %w (the journals were written by another user or on another host: recover with that key, --journal-key FILE)", ErrUntrustedJournal, err)
			}
		}
	}
	if in.Note == nil {
		in.Note = func(string) {}
	}
	if in.Report == nil {
		in.Report = func(Recovered) {}
	}
	return in, nil
}

// Recover undoes the pending faults of the journals, newest first within
// each journal as the runner does, and records each undo as done in its
// journal. A journal that cannot be read (errors.Is ErrBadJournal), or
// with an entry that is not sealed with the journal key or that in.Check
// refuses (errors.Is ErrUntrustedJournal), is refused whole before any
// undo, and the others are recovered: the error returned then joins why
// each was refused. A fault that cannot be undone is counted in Failed
// and stays pending.
func Recover(ctx context.Context, in RecoverInput) (sum RecoverSummary, err error) {
	in, err = in.withDefaults()
	if err != nil {
		return sum, err
	}
	key, heads, note, report := in.Key, in.Heads, in.Note, in.Report
	forced, err := forcedLines(in.Force, in.Journals)
	if err != nil {
		return sum, err
	}
	pending := make([][]JournalEntry, len(in.Journals))
	var refused []error
	for i, path := range in.Journals {
		live, err := skipLive(path, note)
		if live {
			sum.Skipped++
			continue
		}
		if err == nil {
			pending[i], err = readTrusted(path, in.Origins[path], key, heads, forced[path], note)
		}
		if err == nil && in.Check != nil {
			err = checkAll(path, pending[i], in.Check)
		}
		if err != nil {
			// One journal refused leaves the others to recover.
			refused = append(refused, err)
			pending[i] = nil
		}
	}
	sum.Refused = len(refused)
	defer func() { err = errors.Join(append(refused, err)...) }()
	for i, path := range in.Journals {
		if len(pending[i]) == 0 {
			continue
		}
		j, err := openJournal(path, in.Origins[path], key, heads, false)
		if err != nil {
			return sum, err
		}
		for k := len(pending[i]) - 1; k >= 0; k-- {
			e := pending[i][k]
			sum.Pending++
			out := Recovered{Journal: path, Entry: e}
			out.Result, out.Why, out.Err = recoverOne(ctx, in.Reconnect, e, forced[path][e.Line])
			if errors.As(out.Err, new(changedError)) {
				out.Err = fmt.Errorf("%w; nothing was written (to undo it anyway: --force-entry %s:%d)", out.Err, path, e.Line)
			}
			if out.Err == nil {
				done := JournalEntry{Op: OpDone, FaultID: e.FaultID, Provider: e.Provider, Result: out.Result}
				if err := j.Append(done); err != nil {
					out.Err = fmt.Errorf("undone, but the journal could not record it: %w", err)
				}
			}
			if out.Err != nil {
				sum.Failed++
				out.Result = ""
			}
			report(out)
		}
		if err := j.Close(); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// checkAll asks check about every pending entry of the journal at path.
func checkAll(path string, pending []JournalEntry, check func(JournalEntry) error) error {
	for _, e := range pending {
		if err := check(e); err != nil {
			return fmt.Errorf("%w: %s:%d: %w; nothing of it was undone", ErrUntrustedJournal, path, e.Line, err)
		}
	}
	return nil
}

// readTrusted is the pending entries of the journal at path that may be
// undone: all of them when its chain holds, only those forced when it is
// broken; a torn last line is said and left out.
func readTrusted(path, origin string, key []byte, heads string, forced map[int]bool, note func(string)) ([]JournalEntry, error) {
	pending, torn, n, err := readPending(path, origin, key, heads)
	switch {
	case errors.Is(err, ErrUntrustedJournal):
		return nil, err
	case err != nil && !errors.Is(err, ErrBrokenChain):
		return nil, fmt.Errorf("%w: %w", ErrBadJournal, err)
	}
	if torn != nil {
		note(fmt.Sprintf("%v: a torn last line (a crash while it was written); its fault was never applied", torn))
	}
	switch {
	case err != nil && len(forced) == 0:
		return nil, fmt.Errorf("%w: %w; nothing of it was undone (to undo one of its entries anyway, name it: --force-entry %s:LINE)", ErrUntrustedJournal, err, path)
	case err != nil:
		note(fmt.Sprintf("%v; undoing only the entries forced", err))
		return onlyForced(path, pending, forced)
	case n != "":
		note(n)
	}
	return pending, nil
}

// skipLive tells whether a live faultline writes the journal at path,
// saying so: a live run's faults are its own to undo, and undoing them
// under it fails it (two CI jobs on one runner, each with a recover step).
func skipLive(path string, note func(string)) (bool, error) {
	live, err := journalInUse(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("%w: %s: %w", ErrBadJournal, path, err)
	}
	if live {
		note(fmt.Sprintf("%s: skipped: %v; it undoes its own faults when it ends (recover it once it is gone)", path, ErrJournalInUse))
	}
	return live, nil
}

// ErrBadJournal marks a journal Recover could not read.
var ErrBadJournal = errors.New("unreadable journal")

// changedError is a target changed since its fault (changedSince).
type changedError struct{ error }

func (e changedError) Unwrap() error { return e.error }

// recoverOne undoes e's fault, unless its target changed since and the
// entry is not forced.
func recoverOne(ctx context.Context, reconnect func(context.Context, JournalEntry) (providers.Provider, error), e JournalEntry, force bool) (result, why string, err error) {
	if e.Undo == nil {
		return "", "", errors.New("journal entry has no undo action")
	}
	p, err := reconnect(ctx, e)
	if errors.Is(err, ErrProviderGone) {
		return ResultAbandoned, err.Error(), nil
	}
	if err != nil {
		return "", "", err
	}
	if !force {
		if err := changedSince(ctx, p, *e.Undo); err != nil {
			return "", "", changedError{err}
		}
	}
	err = RunUndo(ctx, p, *e.Undo)
	if errors.Is(err, ErrNothingToUndo) {
		return ResultUndone, err.Error(), nil
	}
	if err != nil {
		return "", "", err
	}
	return ResultUndone, "", nil
}

// forcedLines reads Force's FILE:LINE entries, by journal; each must name
// one of the journals.
func forcedLines(force, journals []string) (map[string]map[int]bool, error) {
	out := map[string]map[int]bool{}
	for _, f := range force {
		i := strings.LastIndex(f, ":")
		line, err := strconv.Atoi(f[i+1:])
		if i < 0 || err != nil || line < 1 {
			return nil, fmt.Errorf("%w: --force-entry %q: expected FILE:LINE", ErrBadJournal, f)
		}
		file := f[:i]
		if !slices.Contains(journals, file) {
			return nil, fmt.Errorf("%w: --force-entry %s: %s is not among the journals read (%s)", ErrBadJournal, f, file, strings.Join(journals, ", "))
		}
		if out[file] == nil {
			out[file] = map[int]bool{}
		}
		out[file][line] = true
	}
	return out, nil
}

// onlyForced keeps the pending entries whose lines are forced; a forced
// line that is not pending is an error.
func onlyForced(path string, pending []JournalEntry, lines map[int]bool) ([]JournalEntry, error) {
	var out []JournalEntry
	for _, e := range pending {
		if lines[e.Line] {
			out = append(out, e)
		}
	}
	if len(out) != len(lines) {
		return nil, fmt.Errorf("%w: --force-entry names a line of %s that is not a pending fault", ErrBadJournal, path)
	}
	return out, nil
}

// readPending streams the journal at path, checking each line's seal
// (errors.Is ErrUntrustedJournal) and its place in the chain (errors.Is
// ErrBrokenChain: the pending entries are still returned, for forcing),
// and keeps only the faults still pending, in order. It returns the torn
// last line's problem, and a note when the journal's end cannot be
// checked.
func readPending(path, origin string, key []byte, heads string) (pending []JournalEntry, torn error, note string, err error) {
	chk, err := newChainCheck(path, origin, heads)
	if err != nil {
		return nil, nil, "", err
	}
	var chainErr error
	var order []string
	open, done := map[string]JournalEntry{}, map[string]bool{}
	torn, err = scanJournal(path, func(e JournalEntry) error {
		if err := verifySeal(path, e, key); err != nil {
			return err
		}
		if chainErr == nil {
			chainErr = chk.next(e)
		}
		switch {
		case e.Op == OpDone:
			done[e.FaultID] = true
			delete(open, e.FaultID)
		case e.Op == OpInject && !done[e.FaultID]:
			if _, ok := open[e.FaultID]; !ok {
				order = append(order, e.FaultID)
			}
			open[e.FaultID] = e
		}
		return nil
	})
	if err != nil {
		return nil, nil, "", err
	}
	for _, id := range order {
		if e, ok := open[id]; ok {
			pending = append(pending, e)
			delete(open, id)
		}
	}
	if chainErr == nil {
		note, chainErr = chk.end()
	}
	return pending, torn, note, chainErr
}

// JournalOrigin is the path the journal content was written to, as its
// first line names it ("" for a journal that does not chain).
func JournalOrigin(content []byte) (string, error) {
	first, _, _ := bytes.Cut(content, []byte("\n"))
	var e JournalEntry
	if err := json.Unmarshal(first, &e); err != nil {
		return "", fmt.Errorf("%w: its first line: %w", ErrBadJournal, err)
	}
	return e.Path, nil
}

// PendingCount counts the faults the journal at path (a copy of the one
// written to origin, when origin is set) still has pending.
func PendingCount(path, origin string, key []byte, heads string) (int, error) {
	pending, _, _, err := readPending(path, origin, key, heads)
	return len(pending), err
}
