package management

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStateFolder: one state per kube-apiserver and manifests as read;
// pointing the manifests at a start's webhook servers (another
// release's managers get new ports at each start) keeps it.
func TestStateFolder(t *testing.T) {
	mf, err := embeddedManifests()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	first := stateFolder(root, "/x/1.35.4-linux-amd64", mf)
	ms := []*manager{}
	for i, b := range managerBinaries {
		ms = append(ms, &manager{name: b.name, provider: b.provider, webhookPort: 40000 + i})
	}
	pointed := mf.deepCopy()
	if err := pointed.pointAt(ms, []byte("a CA")); err != nil {
		t.Fatal(err)
	}
	if got := stateFolder(root, "/x/1.35.4-linux-amd64", pointed); got != first {
		t.Errorf("pointed at webhook servers, the state is %s, want %s", got, first)
	}
	again, err := embeddedManifests()
	if err != nil {
		t.Fatal(err)
	}
	if got := stateFolder(root, "/y/1.35.4-linux-amd64", again); got != first {
		t.Errorf("read again, the state is %s, want %s", got, first)
	}
	if got := stateFolder(root, "/x/1.36.0-linux-amd64", mf); got == first {
		t.Error("another kube-apiserver has the same state")
	}
	changed := mf.deepCopy()
	changed.crds = changed.crds[1:]
	if sum, err := changed.digest(); err != nil || sum == mf.sum {
		t.Errorf("a CRD fewer: digest %s, %v; want another", sum, err)
	}
}

// TestStoreState: a stored state is a copy of etcd's folder with the
// webhook server's certificate and port; a second store of the same state
// leaves the first and no half-made folder; one management plane at a
// time holds its port.
func TestStoreState(t *testing.T) {
	etcd := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(etcd, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("member/snap/db", "db")
	write("member/wal/0.wal", "wal")
	folder := filepath.Join(t.TempDir(), "states", "s")
	if stored(folder) {
		t.Fatal("stored before it was")
	}
	certs := map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key")}
	for i, want := range []bool{true, false} {
		if ours, err := storeState(folder, etcd, certs, 21234+i); err != nil || ours != want {
			t.Fatalf("store %d: ours %v, %v; want %v", i, ours, err, want)
		}
	}
	if !stored(folder) {
		t.Fatal("not stored")
	}
	if b, err := os.ReadFile(filepath.Join(folder, "member", "wal", "0.wal")); err != nil || string(b) != "wal" {
		t.Errorf("stored wal: %q, %v", b, err)
	}
	if left, err := os.ReadDir(filepath.Dir(folder)); err != nil || len(left) != 1 {
		t.Errorf("the states' folder holds %v (%v), want the state alone", left, err)
	}
	hold, why := holdPort(folder)
	if hold == nil || hold.port != 21234 {
		t.Fatalf("holdPort = %+v (%s), want port 21234", hold, why)
	}
	if again, _ := holdPort(folder); again != nil {
		t.Error("the port was held twice")
	}
	if err := hold.release(); err != nil {
		t.Fatal(err)
	}
	if again, why := holdPort(folder); again == nil {
		t.Errorf("released, the port cannot be held: %s", why)
	} else if err := again.release(); err != nil {
		t.Fatal(err)
	}
	lab := t.TempDir()
	if err := copyTree(folder, lab); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(lab, "member", "snap", "db")); err != nil || string(b) != "db" {
		t.Errorf("copied in: %q, %v", b, err)
	}
}

// TestVerifyState: a stored state verifies as stored, and not once a file
// is changed, added, removed or replaced by a FIFO (which verifyDigests
// does not open: it would hold the start for ever).
func TestVerifyState(t *testing.T) {
	etcd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(etcd, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etcd, "member", "snap", "db"), []byte("db"), 0o600); err != nil {
		t.Fatal(err)
	}
	certs := map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key")}
	for _, tc := range []struct {
		name, want string
		change     func(folder string) error
	}{
		{"as stored", "", func(string) error { return nil }},
		{"key changed", "webhook/tls.key: changed since it was recorded", func(f string) error {
			return os.WriteFile(filepath.Join(f, "webhook", "tls.key"), []byte("yek"), 0o600)
		}},
		{"file added", "member/snap/extra: not among the files recorded", func(f string) error {
			return os.WriteFile(filepath.Join(f, "member", "snap", "extra"), nil, 0o600)
		}},
		{"file removed", "member/snap/db: gone since it was recorded", func(f string) error {
			return os.Remove(filepath.Join(f, "member", "snap", "db"))
		}},
		{"a FIFO", "member/snap/db: not a regular file", func(f string) error {
			return errors.Join(os.Remove(filepath.Join(f, "member", "snap", "db")), syscall.Mkfifo(filepath.Join(f, "member", "snap", "db"), 0o600))
		}},
		{"no digests", "its digests:", func(f string) error { return os.Remove(filepath.Join(f, digestsFile)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			folder := filepath.Join(t.TempDir(), "s")
			if _, err := storeState(folder, etcd, certs, 21234); err != nil {
				t.Fatal(err)
			}
			if err := tc.change(folder); err != nil {
				t.Fatal(err)
			}
			err := verifyDigests(folder)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("verifyDigests: %v, want %q", err, tc.want)
			}
		})
	}
}
