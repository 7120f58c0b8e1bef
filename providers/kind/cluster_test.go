package kind

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

func TestClusterConfig(t *testing.T) {
	t.Parallel()
	cfg := ClusterConfig(3, 2, HostQuirks{CgroupV1: true})
	if len(cfg.Nodes) != 5 || !cfg.Networking.DisableDefaultCNI || len(cfg.KubeadmConfigPatches) != 1 || !strings.Contains(cfg.KubeadmConfigPatches[0], "failCgroupV1: false") {
		t.Fatalf("config: %+v", cfg)
	}
	if cfg := ClusterConfig(1, 0, HostQuirks{}); len(cfg.KubeadmConfigPatches) != 0 {
		t.Fatalf("a cgroup v2 host needs no patch: %v", cfg.KubeadmConfigPatches)
	}
}

func TestDetectQuirks(t *testing.T) {
	t.Parallel()
	d := &scriptedDocker{out: map[string]string{"info": "1"}, err: map[string]error{
		"run": &DockerError{Err: errors.New("exit status 125"), Stderr: "runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown"},
	}}
	q, err := DetectQuirks(context.Background(), d, "img")
	if err != nil || !q.NoPrivileged || !q.CgroupV1 {
		t.Fatalf("quirks %+v, %v", q, err)
	}
	d.err["run"] = &DockerError{Err: errors.New("exit status 125"), Stderr: "Unable to find image 'img' locally"}
	if _, err := DetectQuirks(context.Background(), d, "img"); err == nil {
		t.Fatal("another failure of the probe container must be an error, not a quirk")
	}
}

type scriptedDocker struct {
	out map[string]string
	err map[string]error
}

func (s *scriptedDocker) Run(_ context.Context, args ...string) ([]byte, error) {
	return []byte(s.out[args[0]]), s.err[args[0]]
}

// The shim rewrites kind's commands for a sandboxed host and passes
// everything else through unchanged.
func TestShim(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
	// The "real" docker prints its arguments, one per line.
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	shim, err := WriteShim(t.TempDir(), HostQuirks{NoPrivileged: true, NoModules: true})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []string {
		out, err := exec.Command(shim, args...).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	got := run("run", "--privileged", "--volume", "/var", "--volume", "/lib/modules:/lib/modules:ro", "--name", "n", "img")
	want := append(append([]string{"run"}, privilegedFlags...), "--volume", "/var", "--name", "n", "img")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run: got %q, want %q", got, want)
	}
	if got := run("exec", "--privileged", "n", "kubeadm", "init"); !reflect.DeepEqual(got, []string{"exec", "n", "kubeadm", "init"}) {
		t.Fatalf("exec: got %q", got)
	}
	if got := run("ps", "-a", "--filter", "label=x"); !reflect.DeepEqual(got, []string{"ps", "-a", "--filter", "label=x"}) {
		t.Fatalf("ps: got %q", got)
	}
	if path, err := WriteShim(t.TempDir(), HostQuirks{CgroupV1: true}); err != nil || path != "" {
		t.Fatalf("a host without docker quirks needs no shim: %q, %v", path, err)
	}
}

func TestRecords(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	if names, err := Recorded(state); err != nil || names != nil {
		t.Fatalf("empty state: %v, %v", names, err)
	}
	for _, n := range []string{"b", "a"} {
		if err := os.MkdirAll(filepath.Join(state, n), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := writeRecord(filepath.Join(state, n), &Record{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(state, "stray"), 0o700); err != nil {
		t.Fatal(err)
	}
	names, err := Recorded(state)
	if err != nil || !reflect.DeepEqual(names, []string{"a", "b"}) || !IsRecorded(state, "a") || IsRecorded(state, "stray") {
		t.Fatalf("records: %v, %v", names, err)
	}
	if err := Down(context.Background(), state, "stray", &scriptedDocker{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "did not create it") {
		t.Fatalf("down of an unrecorded cluster: %v", err)
	}
}

func testLogger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{})
}

// TestNewestImage: the default image is of the highest Kubernetes version
// here, whatever older version was built later.
func TestNewestImage(t *testing.T) {
	t.Parallel()
	d := &scriptedDocker{out: map[string]string{"images": ImageRepository + ":v1-old\t2026-11-01 10:00:00 +0000 UTC\n" + ImageRepository + ":v1-new\t2026-11-23 10:00:00 +0000 UTC\n"}}
	if got, err := NewestImage(context.Background(), d); err != nil || got != ImageRepository+":v1-new" {
		t.Fatalf("newest: %q, %v", got, err)
	}
	// An older Kubernetes built later is not the default.
	d.out["images"] = ImageRepository + ":v1.35.4-aaa\t2026-11-01 10:00:00 +0000 UTC\n" + ImageRepository + ":v1.30.14-bbb\t2026-11-26 10:00:00 +0000 UTC\n" + ImageRepository + ":v1-new\t2026-11-27 10:00:00 +0000 UTC\n"
	if got, err := NewestImage(context.Background(), d); err != nil || got != ImageRepository+":v1.35.4-aaa" {
		t.Fatalf("highest version: %q, %v", got, err)
	}
	d.out["images"] = ""
	if _, err := NewestImage(context.Background(), d); err == nil || !strings.Contains(err.Error(), "hack/kind-image.sh") {
		t.Fatalf("no image: %v", err)
	}
}

// TestImageOf: the image of a Kubernetes version is the newest tagged
// with it, whatever newer image of another version there is; none is an
// error that says how to build it.
func TestImageOf(t *testing.T) {
	t.Parallel()
	d := &scriptedDocker{out: map[string]string{"images": ImageRepository + ":v1.35.4-aaa\t2026-11-01 10:00:00 +0000 UTC\n" +
		ImageRepository + ":v1.34.3-bbb\t2026-11-26 10:00:00 +0000 UTC\n" + ImageRepository + ":v1.35.4-ccc\t2026-11-20 10:00:00 +0000 UTC\n"}}
	if got, err := ImageOf(context.Background(), d, "v1.35.4"); err != nil || got != ImageRepository+":v1.35.4-ccc" {
		t.Errorf("v1.35.4: %q, %v", got, err)
	}
	if got, err := ImageOf(context.Background(), d, "1.34.3"); err != nil || got != ImageRepository+":v1.34.3-bbb" {
		t.Errorf("1.34.3: %q, %v", got, err)
	}
	if _, err := ImageOf(context.Background(), d, "v1.33.0"); err == nil || !strings.Contains(err.Error(), "KUBE_VERSION=1.33.0 hack/kind-image.sh") {
		t.Errorf("v1.33.0: %v, want how to build it", err)
	}
}

func TestUpOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    UpOptions
		want string
	}{
		{"ok", UpOptions{Name: "c", ControlPlanes: 1, State: "/s"}, ""},
		{"no name", UpOptions{ControlPlanes: 1, State: "/s"}, "name: required"},
		{"no control plane", UpOptions{Name: "c", State: "/s"}, "controlPlanes: got 0, expected 1 or more"},
		{"negative workers", UpOptions{Name: "c", ControlPlanes: 3, Workers: -1, State: "/s"}, "workers: got -1"},
		{"no state", UpOptions{Name: "c", ControlPlanes: 1}, "state: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
