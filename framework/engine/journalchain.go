package engine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// A journal's lines are chained: each line's seal covers the journal's
// random identity, the file it was written to, its line number and the MAC
// of the line before it. A sealed line copied into another journal, a line
// repeated, lines reordered or one cut from the middle no longer verify.
// Cutting lines off the end leaves a chain that does: so each append also
// records the journal's head (its last line number and MAC) beside the
// journal key, out of reach of whoever can write the artifacts folder, and
// recover compares. A journal recovered on another host has no head
// there; recover says it cannot tell a truncation then.

// chain is where a journal's next line goes.
type chain struct {
	id, path string
	// seq is the last line's number, mac its MAC (hex); 0 and "" before
	// the first.
	seq int
	mac string
	// heads is the folder of head records; "" records none.
	heads string
}

// JournalHeads is the folder of journal heads beside the journal key at
// keyPath: where the journals sealed with that key record their ends.
func JournalHeads(keyPath string) string {
	return filepath.Join(filepath.Dir(keyPath), "journals")
}

// chainFrom is the chain of the journal at abs: a new one for a journal
// that does not exist or is empty, else the one its last line ends. A torn
// last line (a crash mid-write, its fault never applied) is cut off, so
// that the next line starts on a line of its own.
func chainFrom(abs, heads string) (chain, error) {
	c := chain{path: abs, heads: heads}
	entries, torn, err := readJournal(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return c, err
	case torn != nil:
		if err := cutTornLine(abs, entries); err != nil {
			return c, fmt.Errorf("%w (cutting it: %w)", torn, err)
		}
	}
	if len(entries) == 0 {
		id := make([]byte, 16)
		if _, err := rand.Read(id); err != nil {
			return c, fmt.Errorf("journal identity: %w", err)
		}
		c.id = hex.EncodeToString(id)
		return c, nil
	}
	last := entries[len(entries)-1]
	c.id, c.seq, c.mac = last.Journal, last.Line, macOf(last.raw)
	if c.id == "" {
		// A journal of a faultline that did not chain: its lines go on
		// under an identity of their own.
		c.id = "unchained-" + last.Time.UTC().Format("20060102T150405.000000000Z")
	}
	return c, nil
}

// cutTornLine truncates the journal after its last whole line.
func cutTornLine(path string, entries []JournalEntry) error {
	size := int64(0)
	for _, e := range entries {
		size += int64(len(e.raw)) + 1
	}
	return os.Truncate(path, size)
}

// macOf is a sealed line's MAC, "" for a line with none.
func macOf(line []byte) string {
	if loc := sealed.FindSubmatchIndex(line); loc != nil {
		return string(line[loc[2]:loc[3]])
	}
	return ""
}

func (c chain) headFile() string { return filepath.Join(c.heads, c.id) }

// recordHead writes the chain's head, replacing the last one whole.
func (c chain) recordHead() error {
	if c.heads == "" {
		return nil
	}
	if err := os.MkdirAll(c.heads, 0o700); err != nil {
		return fmt.Errorf("journal head: %w", err)
	}
	tmp, err := os.CreateTemp(c.heads, ".head-*")
	if err != nil {
		return fmt.Errorf("journal head: %w", err)
	}
	_, err = fmt.Fprintf(tmp, "%d %s %s\n", c.seq, c.mac, c.path)
	if err = errors.Join(err, tmp.Sync(), tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), c.headFile())
	}
	if err != nil {
		return errors.Join(fmt.Errorf("journal head %s: %w", c.headFile(), err), os.Remove(tmp.Name()))
	}
	return nil
}

// readHead reads the head recorded for journal id: its last line's number
// and MAC; ok is false when none is recorded here.
func readHead(heads, id string) (seq int, mac string, ok bool, err error) {
	if heads == "" || id == "" || strings.ContainsAny(id, `/\.`) {
		return 0, "", false, nil
	}
	b, err := regularfile.Read(filepath.Join(heads, id), regularfile.Small)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("journal head: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, "", false, fmt.Errorf("journal head %s: malformed", filepath.Join(heads, id))
	}
	if seq, err = strconv.Atoi(f[0]); err != nil {
		return 0, "", false, fmt.Errorf("journal head %s: malformed", filepath.Join(heads, id))
	}
	return seq, f[1], true, nil
}

// ErrBrokenChain marks a journal whose lines are sealed but not where
// faultline wrote them: copied from another journal, repeated, reordered,
// or cut short.
var ErrBrokenChain = errors.New("journal lines out of place")

// verifyChain checks that the sealed entries of the journal at path are
// the lines faultline wrote there, in order and whole: one identity, line
// numbers and previous MACs that follow, the file it was written to, and
// no fewer lines than its head recorded in heads. It returns the first
// problem (errors.Is ErrBrokenChain), and a note when no head is recorded
// here (a truncation cannot be told).
func verifyChain(path string, entries []JournalEntry, heads string) (note string, err error) {
	if len(entries) == 0 {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	broken := func(e JournalEntry, format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: %s", ErrBrokenChain, path, e.Line, fmt.Sprintf(format, args...))
	}
	id := entries[0].Journal
	prev := ""
	for _, e := range entries {
		switch {
		case e.Journal == "":
			return "", broken(e, "the line is not chained to its journal (written by a faultline before journals were)")
		case e.Journal != id:
			return "", broken(e, "the line belongs to journal %s, the file's first line to %s: copied from another journal", e.Journal, id)
		case e.Seq != e.Line:
			return "", broken(e, "the line was written as line %d: repeated, reordered, or lines before it removed", e.Seq)
		case e.Prev != prev:
			return "", broken(e, "the line does not follow the one before it: repeated, reordered, or lines removed")
		case e.Path != abs:
			return "", broken(e, "the line was written to %s: a journal is recovered where it was written", e.Path)
		}
		prev = macOf(e.raw)
	}
	last := entries[len(entries)-1]
	seq, mac, ok, err := readHead(heads, id)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return fmt.Sprintf("%s: no head of journal %s is recorded in %s (written on another host or by another user): whether lines were cut off its end cannot be told", path, id, heads), nil
	case seq > last.Seq:
		return "", broken(last, "the journal had %d lines and has %d: its end was cut off (a done line removed revives a finished fault)", seq, last.Seq)
	case seq == last.Seq && mac != macOf(last.raw):
		return "", broken(last, "the last line is not the one faultline wrote there last")
	}
	return "", nil
}
