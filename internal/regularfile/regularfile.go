package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Caps for the kinds of file faultline reads.
const (
	// Small is a key, a password, a CA bundle or a known-hosts file.
	Small = 1 << 20
	// Kubeconfig is a kubeconfig, certificates embedded.
	Kubeconfig = 16 << 20
	// Journal is a run's journal: a line a fault, each under 1 MiB. It is
	// streamed (a reader keeps only what is pending), so the cap only
	// keeps a runaway file from being read for ever.
	Journal = 1 << 30
)

// ErrNotRegular is a path that is a FIFO, a device, a socket or a folder.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading without blocking in open(2) (a FIFO with no
// writer would hold it, signals and all), and returns it only if it is a
// regular file of at most limit bytes.
func Open(path string, limit int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := check(f, path, limit); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// Check is Open without keeping the file open, for files a library reads
// itself (client-go's kubeconfig, govmomi's CA bundle).
func Check(path string, limit int64) error {
	f, err := Open(path, limit)
	if err != nil {
		return err
	}
	return f.Close()
}

// Read reads the regular file at path, of at most limit bytes.
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes (it grew while read)", path, limit)
	}
	return b, nil
}

func check(f *os.File, path string, limit int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	if fi.Size() > limit {
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, more than the %d it may have", fi.Size(), limit)}
	}
	return nil
}

// kind names a file mode's type.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not regular"
}

// ErrSymlink is a path to be written that is a symbolic link: writing
// through it would truncate or append to whatever it points at.
var ErrSymlink = errors.New("a symbolic link, which faultline does not write through")

// OpenWrite opens path for writing with flag (os.O_CREATE, os.O_TRUNC,
// os.O_APPEND, os.O_EXCL) and perm, as os.OpenFile does, but never
// through a symbolic link (O_NOFOLLOW), never blocking in open(2) (a FIFO
// with no reader is refused at once), and only onto a regular file.
func OpenWrite(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &fs.PathError{Op: "write", Path: path, Err: ErrSymlink}
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// Create is OpenWrite to create or truncate, as os.Create does.
func Create(path string, perm fs.FileMode) (*os.File, error) {
	return OpenWrite(path, os.O_CREATE|os.O_TRUNC, perm)
}

// WriteFile is os.WriteFile through Create.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}
