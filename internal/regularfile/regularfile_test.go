package regularfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// A FIFO, /dev/zero, a folder and a file over the cap are refused at
// once, naming the path; a regular file is read.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, fifo + ": not a regular file (a FIFO)"},
		{"/dev/zero", "/dev/zero: not a regular file (a character device)"},
		{dir, dir + ": not a regular file (a folder)"},
		{big, big + ": 2048 bytes, more than the 1024 it may have"},
	} {
		started := time.Now()
		_, err := regularfile.Read(tc.path, 1024)
		if err == nil || !strings.Contains(err.Error(), tc.want) || time.Since(started) > time.Second {
			t.Errorf("Read(%s): %v after %s, want %q at once", tc.path, err, time.Since(started), tc.want)
		}
		if strings.Contains(tc.want, "not a regular") && !errors.Is(err, regularfile.ErrNotRegular) {
			t.Errorf("Read(%s): %v is not ErrNotRegular", tc.path, err)
		}
	}
	if b, err := regularfile.Read(ok, 1024); err != nil || string(b) != "key" {
		t.Errorf("Read(ok) = %q, %v", b, err)
	}
}

// TestOpenWriteRefusesLinksAndFIFOs: a symbolic link planted where a file
// is written (an artifacts folder anyone in the group can write) is not
// written through, and what it points at is left whole; a FIFO is refused
// at once, not waited on; a regular file is written.
func TestOpenWriteRefusesLinksAndFIFOs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "journal.jsonl")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := regularfile.WriteFile(link, []byte("x"), 0o600); !errors.Is(err, regularfile.ErrSymlink) || !strings.Contains(err.Error(), link) {
		t.Errorf("write through a link: %v, want ErrSymlink naming %s", err, link)
	}
	if _, err := regularfile.OpenWrite(link, os.O_CREATE|os.O_APPEND, 0o600); !errors.Is(err, regularfile.ErrSymlink) {
		t.Errorf("append through a link: %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the link's target now holds %q", b)
	}
	fifo := filepath.Join(dir, "report.html")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := regularfile.WriteFile(fifo, []byte("x"), 0o600); err == nil {
		t.Error("a FIFO was written")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the FIFO held the write %s", d)
	}
	plain := filepath.Join(dir, "result.json")
	if err := regularfile.WriteFile(plain, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(plain); string(b) != "{}" {
		t.Errorf("result.json holds %q", b)
	}
}
