package engine

import (
	"context"
	"errors"
	"fmt"

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
}

// Recover undoes the pending faults of the journals, newest first within
// each journal as the runner does, and records each undo as done in its
// journal. An unreadable journal is an error before anything is undone
// (errors.Is ErrBadJournal), and so is an entry that is not sealed with
// the journal key or that in.Check refuses (errors.Is
// ErrUntrustedJournal); a fault that cannot be undone is counted in
// Failed and stays pending.
func Recover(ctx context.Context, in RecoverInput) (RecoverSummary, error) {
	var sum RecoverSummary
	key := in.Key
	if key == nil {
		path, err := JournalKeyPath()
		if err != nil {
			return sum, err
		}
		if key, err = LoadJournalKey(path, false); err != nil {
			return sum, fmt.Errorf("%w: %w (the journals were written by another user or on another host: recover with that key, --journal-key FILE)", ErrUntrustedJournal, err)
		}
	}
	pending := make([][]JournalEntry, len(in.Journals))
	for i, path := range in.Journals {
		entries, err := ReadJournal(path)
		if err != nil {
			return sum, fmt.Errorf("%w: %w", ErrBadJournal, err)
		}
		if err := VerifyJournal(path, entries, key); err != nil {
			return sum, err
		}
		pending[i] = Pending(entries)
		if in.Check == nil {
			continue
		}
		for _, e := range pending[i] {
			if err := in.Check(e); err != nil {
				return sum, fmt.Errorf("%w: %s:%d: %w; nothing was undone", ErrUntrustedJournal, path, e.Line, err)
			}
		}
	}
	report := in.Report
	if report == nil {
		report = func(Recovered) {}
	}
	for i, path := range in.Journals {
		if len(pending[i]) == 0 {
			continue
		}
		j, err := openJournal(path, key)
		if err != nil {
			return sum, err
		}
		for k := len(pending[i]) - 1; k >= 0; k-- {
			e := pending[i][k]
			sum.Pending++
			out := Recovered{Journal: path, Entry: e}
			out.Result, out.Why, out.Err = recoverOne(ctx, in.Reconnect, e)
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

// ErrBadJournal marks a journal Recover could not read.
var ErrBadJournal = errors.New("unreadable journal")

func recoverOne(ctx context.Context, reconnect func(context.Context, JournalEntry) (providers.Provider, error), e JournalEntry) (result, why string, err error) {
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
	err = RunUndo(ctx, p, *e.Undo)
	if errors.Is(err, ErrNothingToUndo) {
		return ResultUndone, err.Error(), nil
	}
	if err != nil {
		return "", "", err
	}
	return ResultUndone, "", nil
}
