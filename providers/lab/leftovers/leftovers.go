// Package leftovers records the folders and files a lab's parts make
// outside the lab's own folder, in $TMPDIR, where faultline does not
// choose the name (vcsim's datastore home and its certificate file,
// envtest's webhook serving key), so that `faultline lab down` removes
// them after a lab killed too hard to clean up (SIGKILL, the OOM killer).
//
// A lab folder's record is a file anyone who can write the folder can
// edit, so what it names is removed only when it is right under $TMPDIR,
// its name starts as one of those parts names its own, it is not a
// symbolic link, and this user owns it.
//
// It imports internal/regularfile and nothing else of faultline.
package leftovers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// file is the record's name in the lab folder.
const file = "outside"

// prefixes start the names of what a lab's parts make in $TMPDIR:
// vcsim's home (simulator.Model.Create) and certificate file
// (Server.CertificateFile), envtest's webhook serving key
// (WebhookInstallOptions.Install).
var prefixes = []string{"govcsim-", "vcsim-", "envtest-serving-certs-"}

// Note records paths as made outside the lab folder dir, before the
// lab's own clean-up would remove them. Paths that Remove would not
// remove (not right under $TMPDIR, another name) are refused.
func Note(dir string, paths ...string) error {
	var b bytes.Buffer
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := removable(p); err != nil {
			return err
		}
		fmt.Fprintln(&b, p)
	}
	if b.Len() == 0 {
		return nil
	}
	f, err := regularfile.OpenWrite(filepath.Join(dir, file), os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("record what the lab made outside its folder: %w", err)
	}
	_, err = f.Write(b.Bytes())
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("record what the lab made outside its folder: %w", err)
	}
	return nil
}

// Remove removes what the lab folder dir records as made outside it,
// telling say each path removed; a path it would not remove is said and
// left.
func Remove(dir string, say func(string)) error {
	b, err := regularfile.Read(filepath.Join(dir, file), regularfile.Small)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lab %s: %w", dir, err)
	}
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		p := sc.Text()
		switch err := removable(p); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			say(fmt.Sprintf("left %s: %v", p, err))
		default:
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
			say("removed " + p)
		}
	}
	return errors.Join(errs...)
}

// removable says why path is not one a lab's part made in $TMPDIR and
// this user may remove, nil when it is.
func removable(path string) error {
	tmp := filepath.Clean(os.TempDir())
	if !filepath.IsAbs(path) || filepath.Dir(filepath.Clean(path)) != tmp {
		return fmt.Errorf("%q: expected a path right under %s", path, tmp)
	}
	base := filepath.Base(path)
	known := false
	for _, p := range prefixes {
		known = known || strings.HasPrefix(base, p)
	}
	if !known {
		return fmt.Errorf("%q: expected a name that starts %s", path, strings.Join(prefixes, ", "))
	}
	st, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("%q: %w", path, err)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%q: a symbolic link", path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("%q: owned by another user", path)
	}
	return nil
}
