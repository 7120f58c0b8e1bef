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
