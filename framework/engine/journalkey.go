package engine

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// EnvJournalKey names the key file that seals journal entries, in place of
// the one in the user's configuration folder (JournalKeyPath).
const EnvJournalKey = "FAULTLINE_JOURNAL_KEY"

// ErrUntrustedJournal marks a journal entry recover will not act on: it
// was changed after faultline wrote it, sealed with another key, or names
// a target the user has not allowed. Nothing is undone and no credential
// is sent.
var ErrUntrustedJournal = errors.New("untrusted journal")

// JournalKeyPath is where the journal key is: $FAULTLINE_JOURNAL_KEY, or
// faultline/journal.key in the user's configuration folder
// ($XDG_CONFIG_HOME or ~/.config). It is kept outside the artifacts
// folder, so that whoever can write a journal cannot seal one.
func JournalKeyPath() (string, error) {
	if p := os.Getenv(EnvJournalKey); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("journal key: %w; set $%s to a file of your own", err, EnvJournalKey)
	}
	return filepath.Join(dir, "faultline", "journal.key"), nil
}

// journalKeySize is the key's length in bytes (HMAC-SHA256's block half).
const journalKeySize = 32

// LoadJournalKey reads the key at path. With create, a missing key is
// made (random, mode 0600 in a folder of mode 0700). A key that others
// can read or write is refused: it would let them seal a journal.
func LoadJournalKey(path string, create bool) ([]byte, error) {
	b, err := regularfile.Read(path, regularfile.Small)
	if errors.Is(err, fs.ErrNotExist) && create {
		return newJournalKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("journal key: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("journal key: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("journal key %s: mode %04o lets others read or write it; expected 0600 (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	key, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil || len(key) != journalKeySize {
		return nil, fmt.Errorf("journal key %s: expected %d hex digits", path, 2*journalKeySize)
	}
	return key, nil
}

func newJournalKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("journal key: %w", err)
	}
	key := make([]byte, journalKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("journal key: %w", err)
	}
	// O_EXCL: two runs starting together make one key, and the second
	// reads it.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadJournalKey(path, false)
	}
	if err != nil {
		return nil, fmt.Errorf("journal key: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return nil, fmt.Errorf("journal key %s: %w", path, err)
	}
	return key, nil
}

// sealed is how a journal line ends: the entry's own JSON object, then its
// MAC as the object's last member.
var sealed = regexp.MustCompile(`,"mac":"([0-9a-f]{64})"}$`)

// seal appends the MAC of the entry's encoding b (a JSON object) to it.
func seal(key, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return append(b[:len(b)-1], fmt.Sprintf(`,"mac":"%x"}`, m.Sum(nil))...)
}

// unseal returns a journal line without its MAC, and whether the MAC is
// the one key gives the rest. A line without a MAC is not sealed.
func unseal(key, line []byte) (body []byte, ok bool) {
	loc := sealed.FindSubmatchIndex(line)
	if loc == nil {
		return line, false
	}
	want, err := hex.DecodeString(string(line[loc[2]:loc[3]]))
	if err != nil {
		return line, false
	}
	body = append(append([]byte(nil), line[:loc[0]]...), '}')
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return body, hmac.Equal(m.Sum(nil), want)
}
