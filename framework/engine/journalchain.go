package engine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// chainFrom is the chain of the journal at abs, open as f: a new one for
// a journal that is empty, else the one its last line ends. A torn last
// line (a crash mid-write, its fault never applied) is cut off through f,
// so that the next line starts on a line of its own.
func chainFrom(abs, origin, heads string, f *os.File) (chain, error) {
	c := chain{path: origin, heads: heads}
	var last *JournalEntry
	whole := int64(0) // the bytes of its whole lines
	torn, err := scanJournal(abs, func(e JournalEntry) error {
		last, whole = &e, whole+int64(len(e.raw))+1
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return c, err
	case torn != nil:
		if err := f.Truncate(whole); err != nil {
			return c, fmt.Errorf("%w (cutting it: %w)", torn, err)
		}
	}
	if last == nil {
		id := make([]byte, 16)
		if _, err := rand.Read(id); err != nil {
			return c, fmt.Errorf("journal identity: %w", err)
		}
		c.id = hex.EncodeToString(id)
		return c, nil
	}
	c.id, c.seq, c.mac = last.Journal, last.Line, macOf(last.raw)
	if c.id == "" {
		// A journal of a faultline that did not chain: its lines go on
		// under an identity of their own.
		c.id = "unchained-" + last.Time.UTC().Format("20060102T150405.000000000Z")
	}
	return c, nil
}

// verifyForAppend refuses to go on with the journal at path unless every
// line of it is sealed and in its place, and its end is the one recorded
// (a torn last line is cut off by chainFrom, as a crash leaves it).
func verifyForAppend(path string, key []byte, heads string) error {
	_, _, _, err := readPending(path, "", key, heads)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, ErrUntrustedJournal), errors.Is(err, ErrBrokenChain):
		return fmt.Errorf("%w: %w; faultline does not append to it (run into a folder of its own, or recover this journal first: faultline recover %s)", ErrUntrustedJournal, err, path)
	}
	return fmt.Errorf("journal %s: %w", path, err)
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

// headFields splits a head as recordHead writes it, "SEQ MAC PATH" (the
// path may hold spaces).
func headFields(b []byte) []string {
	return strings.SplitN(strings.TrimSuffix(string(b), "\n"), " ", 3)
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
	f := headFields(b)
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

// chainCheck follows a journal's chain line by line (next), then checks
// its end against the head recorded in heads (end).
type chainCheck struct {
	path, abs, heads string
	id, prev         string
	last             *JournalEntry
}

func newChainCheck(path, origin, heads string) (*chainCheck, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if origin != "" {
		abs = origin // a copy: its lines name where they were written
	}
	return &chainCheck{path: path, abs: abs, heads: heads}, nil
}

// broken is a problem of e's place, errors.Is ErrBrokenChain.
func (c *chainCheck) broken(e JournalEntry, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrBrokenChain, c.path, e.Line, fmt.Sprintf(format, args...))
}

// next checks that e follows the lines before it: one identity, its line
// number, the previous line's MAC, the file it was written to.
func (c *chainCheck) next(e JournalEntry) error {
	if c.last == nil {
		c.id = e.Journal
	}
	switch {
	case e.Journal == "":
		return c.broken(e, "the line is not chained to its journal (written by a faultline before journals were)")
	case e.Journal != c.id:
		return c.broken(e, "the line belongs to journal %s, the file's first line to %s: copied from another journal", e.Journal, c.id)
	case e.Seq != e.Line:
		return c.broken(e, "the line was written as line %d: repeated, reordered, or lines before it removed", e.Seq)
	case e.Prev != c.prev:
		return c.broken(e, "the line does not follow the one before it: repeated, reordered, or lines removed")
	case e.Path != c.abs:
		return c.broken(e, "the line was written to %s: a journal is recovered where it was written", e.Path)
	}
	c.prev, c.last = macOf(e.raw), &e
	return nil
}

// end checks the journal's last line against its recorded head: no fewer
// lines than faultline wrote. The note says when no head is recorded here
// (a truncation cannot be told).
func (c *chainCheck) end() (note string, err error) {
	if c.last == nil {
		return "", nil
	}
	seq, mac, ok, err := readHead(c.heads, c.id)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return fmt.Sprintf("%s: no head of journal %s is recorded in %s (written on another host or by another user): whether lines were cut off its end cannot be told", c.path, c.id, c.heads), nil
	case seq > c.last.Seq:
		return "", c.broken(*c.last, "the journal had %d lines and has %d: its end was cut off (a done line removed revives a finished fault)", seq, c.last.Seq)
	case seq == c.last.Seq && mac != macOf(c.last.raw):
		return "", c.broken(*c.last, "the last line is not the one faultline wrote there last")
	}
	return "", nil
}

// RecordedJournals are the journals whose heads heads records (every
// journal this user's faultline wrote with that key, wherever it was
// written) that still exist, sorted: what recover reads besides
// $ARTIFACTS when it is given no journal.
func RecordedJournals(heads string) ([]string, error) {
	entries, err := os.ReadDir(heads)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal heads: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := regularfile.Read(filepath.Join(heads, e.Name()), regularfile.Small)
		if err != nil {
			return nil, fmt.Errorf("journal head: %w", err)
		}
		f := headFields(b)
		if len(f) < 3 || !filepath.IsAbs(f[2]) {
			continue
		}
		if st, err := os.Stat(f[2]); err == nil && st.Mode().IsRegular() {
			out = append(out, f[2])
		}
	}
	slices.Sort(out)
	return out, nil
}
