package jobs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// A pod sends its run folder back in its log, after its run: a line
// archiveBegin, the folder as a gzipped tar in base64 lines of
// archiveLineWidth, and a line archiveEnd followed by the SHA-256 (hex) of
// the decoded archive. Short lines pass through every container runtime's
// log whole; the checksum tells a cut log from a whole one.
const (
	archiveBegin     = "--- faultline run folder begins ---"
	archiveEnd       = "--- faultline run folder ends "
	archiveLineWidth = 76
	// maxArchiveBytes bounds the archive a log may carry, decoded; a run
	// folder is a few megabytes.
	maxArchiveBytes = 256 << 20
)

// Emit writes run folder dir to w as a pod sends it back (regular files
// and folders only).
func Emit(w io.Writer, dir string) error {
	var archive bytes.Buffer
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // nothing but files and folders leaves the pod
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil || info.IsDir() {
			return err
		}
		f, err := regularfile.Open(path, maxArchiveBytes)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return errors.Join(err, f.Close())
	})
	if err = errors.Join(err, tw.Close(), gz.Close()); err != nil {
		return fmt.Errorf("archive run folder %s: %w", dir, err)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, archiveBegin)
	enc := base64.StdEncoding.EncodeToString(archive.Bytes())
	for len(enc) > 0 {
		n := min(archiveLineWidth, len(enc))
		fmt.Fprintln(bw, enc[:n])
		enc = enc[n:]
	}
	fmt.Fprintf(bw, "%s%x\n", archiveEnd, sha256.Sum256(archive.Bytes()))
	return bw.Flush()
}

// collector reads a pod's log: the lines before and after its run folder
// go to out; the folder is kept until it ends whole.
type collector struct {
	out io.Writer
	// in: between archiveBegin and archiveEnd.
	in      bool
	encoded strings.Builder
	// archive is the decoded archive once it ended whole.
	archive []byte
	err     error
}

// line takes one line of the log, without its newline.
func (c *collector) line(l string) {
	switch {
	case l == archiveBegin:
		c.in, c.archive, c.err = true, nil, nil
		c.encoded.Reset()
	case c.in && strings.HasPrefix(l, archiveEnd):
		c.in = false
		b, err := base64.StdEncoding.DecodeString(c.encoded.String())
		switch {
		case err != nil:
			c.err = fmt.Errorf("the run folder in the pod's log does not decode: %w", err)
		case fmt.Sprintf("%x", sha256.Sum256(b)) != strings.TrimPrefix(l, archiveEnd):
			c.err = errors.New("the run folder in the pod's log does not match its checksum (the log was cut)")
		default:
			c.archive = b
		}
	case c.in:
		if c.encoded.Len()+len(l) > maxArchiveBytes*4/3+archiveLineWidth {
			c.in, c.err = false, fmt.Errorf("the run folder in the pod's log is over %d MiB", maxArchiveBytes>>20)
			return
		}
		c.encoded.WriteString(l)
	default:
		fmt.Fprintln(c.out, l)
	}
}

// extract writes archive's files under dir, which must not hold them yet;
// a name that leaves dir, or an entry neither file nor folder, is refused.
func extract(archive []byte, dir string) error {
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(hdr.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("the run folder names %q, outside it", hdr.Name)
		}
		path := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
			continue
		case tar.TypeReg:
		default:
			return fmt.Errorf("the run folder's %s is neither a file nor a folder", hdr.Name)
		}
		if total += hdr.Size; total > maxArchiveBytes {
			return fmt.Errorf("the run folder is over %d MiB", maxArchiveBytes>>20)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := regularfile.OpenWrite(path, os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(tr, hdr.Size))
		if err = errors.Join(err, f.Close()); err != nil {
			return err
		}
	}
}
