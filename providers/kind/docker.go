package kind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Docker runs the docker CLI with an argument slice, never through a shell,
// and returns what it printed on stdout. Tests give the provider a fake.
type Docker interface {
	Run(ctx context.Context, args ...string) ([]byte, error)
}

// ExecDocker runs the docker binary found on PATH.
type ExecDocker struct{}

// Run implements Docker. The error holds docker's stderr.
func (ExecDocker) Run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &DockerError{Args: args, Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.Bytes(), nil
}

// DockerError is a docker command that failed.
type DockerError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *DockerError) Error() string {
	msg := fmt.Sprintf("docker %s: %v", strings.Join(e.Args, " "), e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *DockerError) Unwrap() error { return e.Err }

// Available tells whether a Docker engine answers; the error says why not.
func Available(ctx context.Context, d Docker) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("no docker CLI on PATH (hack/docker.sh installs Debian's docker.io): %w", err)
	}
	if _, err := d.Run(ctx, "version", "--format", "{{.Server.Version}}"); err != nil {
		return fmt.Errorf("no Docker engine answers (hack/docker.sh starts dockerd): %w", err)
	}
	return nil
}

// HostQuirks are the ways a docker host differs from a normal one that kind
// has to be adapted to. A normal host has none of them.
type HostQuirks struct {
	// NoPrivileged: the engine's capability bounding set lacks
	// CAP_SYS_RESOURCE (a sandboxed host), so `docker run --privileged`
	// fails in runc with "unable to apply caps".
	NoPrivileged bool
	// NoModules: the host has no /lib/modules for kind to mount.
	NoModules bool
	// CgroupV1: the host runs cgroup v1, which kubelet refuses unless
	// told (failCgroupV1: false).
	CgroupV1 bool
}

// Any tells whether a docker shim is needed.
func (q HostQuirks) Any() bool { return q.NoPrivileged || q.NoModules }

func (q HostQuirks) String() string {
	var parts []string
	if q.NoPrivileged {
		parts = append(parts, "no --privileged (the engine lacks CAP_SYS_RESOURCE)")
	}
	if q.NoModules {
		parts = append(parts, "no /lib/modules")
	}
	if q.CgroupV1 {
		parts = append(parts, "cgroup v1")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// DetectQuirks finds the host's quirks: it starts a throw-away
// --privileged container of image (which must have /bin/true).
func DetectQuirks(ctx context.Context, d Docker, image string) (HostQuirks, error) {
	var q HostQuirks
	out, err := d.Run(ctx, "info", "--format", "{{.CgroupVersion}}")
	if err != nil {
		return q, err
	}
	q.CgroupV1 = strings.TrimSpace(string(out)) == "1"
	if _, err := os.Stat("/lib/modules"); errors.Is(err, os.ErrNotExist) {
		q.NoModules = true
	}
	_, err = d.Run(ctx, "run", "--rm", "--privileged", "--entrypoint", "/bin/true", image)
	var de *DockerError
	switch {
	case err == nil:
	case errors.As(err, &de) && (strings.Contains(de.Stderr, "apply caps") || strings.Contains(de.Stderr, "operation not permitted")):
		q.NoPrivileged = true
	default:
		return q, fmt.Errorf("probe --privileged containers: %w", err)
	}
	return q, nil
}

// NodeRunFlags are the `docker run` flags of a node container on a host
// with quirks q, as kind gives its nodes: privileged (or, where the engine
// cannot grant that, privilegedFlags), seccomp and AppArmor off, /tmp and
// /run on tmpfs, /var a volume, and the host's /lib/modules when it has
// one.
func NodeRunFlags(q HostQuirks) []string {
	flags := []string{"--privileged"}
	if q.NoPrivileged {
		flags = append([]string(nil), privilegedFlags...)
	}
	flags = append(flags, "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
		"--tmpfs", "/tmp", "--tmpfs", "/run", "--volume", "/var", "--init=false", "--cgroupns=private")
	if !q.NoModules {
		flags = append(flags, "--volume", "/lib/modules:/lib/modules:ro")
	}
	return flags
}

// privilegedFlags stand in for --privileged where the engine cannot grant
// every capability: all but CAP_SYS_RESOURCE, every device, /proc and /sys
// unmasked. The node's entrypoint (hack/kind-node/entrypoint) then remounts
// the cgroup v1 hierarchies read-write and tells containerd not to lower
// OOM scores.
var privilegedFlags = []string{"--cap-add=ALL", "--cap-drop=SYS_RESOURCE", "--security-opt", "systempaths=unconfined", "--device-cgroup-rule=a *:* rwm"}

// WriteShim writes, in dir, a `docker` that adapts kind's docker commands
// to q and runs the real docker (the first on PATH outside dir). kind
// calls `docker` from PATH: dir goes first on it (ShimDir). Without quirks
// it writes nothing and returns "".
func WriteShim(dir string, q HostQuirks) (string, error) {
	if !q.Any() {
		return "", nil
	}
	real, err := realDocker(dir)
	if err != nil {
		return "", err
	}
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	script := fmt.Sprintf(shimScript, q.String(), boolFlag(q.NoPrivileged), boolFlag(q.NoModules), strings.Join(quoteAll(privilegedFlags), " "), real)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "docker")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", err
	}
	return path, nil
}

// realDocker is the first docker on PATH that is not in the shim's folder.
func realDocker(shimDir string) (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" || filepath.Clean(d) == filepath.Clean(shimDir) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(d, "docker")); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no docker on PATH outside %s: %w", shimDir, exec.ErrNotFound)
}

// shimScript is the docker shim: %s the quirks, %s and %s whether to
// replace --privileged and drop the /lib/modules volume, %s the flags that
// replace --privileged in `docker run` (in `docker exec` it is dropped: an
// exec has the container's capabilities), %s the real docker.
const shimScript = `#!/bin/sh
# Written by faultline (providers/kind) for kind on this docker host: %s.
# One for every kind cluster of its state folder; it runs the real docker.
nopriv=%s
nomodules=%s
sub="$1"
first=1
held=""
for a in "$@"; do
  if [ "$first" = 1 ]; then set --; first=0; fi
  if [ -n "$held" ]; then
    case "$a" in /lib/modules:*) if [ "$nomodules" = 1 ]; then held=""; continue; fi;; esac
    set -- "$@" "$held" "$a"; held=""; continue
  fi
  case "$a" in
    --privileged)
      if [ "$nopriv" = 1 ]; then
        if [ "$sub" = run ]; then set -- "$@" %s; fi
        continue
      fi;;
    --volume|-v) held="$a"; continue;;
  esac
  set -- "$@" "$a"
done
if [ -n "$held" ]; then set -- "$@" "$held"; fi
exec '%s' "$@"
`

func boolFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + a + "'"
	}
	return out
}

// freezeRetry bounds how long Pause retries a freeze the kernel did not
// finish.
var freezeRetry = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 7, Cap: 5 * time.Second}

// Pause runs `docker pause name`, again while runc reports "unable to
// freeze". On cgroup v1, runc gives up when the container's processes do
// not all freeze in its few tries (a node busy forking, just after boot, on
// a loaded host), thaws it and fails; runc's maintainers leave the retry to
// the caller (opencontainers/runc#4388). About 20 s of tries in all.
func Pause(ctx context.Context, d Docker, name string) error {
	var last error
	tries := 0
	err := wait.ExponentialBackoffWithContext(ctx, freezeRetry, func(ctx context.Context) (bool, error) {
		tries++
		_, last = d.Run(ctx, "pause", name)
		var de *DockerError
		if errors.As(last, &de) && strings.Contains(de.Stderr, "unable to freeze") {
			return false, nil
		}
		return true, last
	})
	if wait.Interrupted(err) && last != nil {
		return fmt.Errorf("%w (tried %d times)", last, tries)
	}
	return err
}
