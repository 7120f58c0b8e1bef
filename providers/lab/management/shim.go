package management

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The lab's kube-apiserver and etcd must die with the process that started
// them, even when it is killed with SIGKILL. envtest starts them itself
// (controller-runtime's process package, with no hook for that), so the
// lab points envtest at a shim instead: a link, in the lab folder, to the
// running executable, which on start (RunShim, the first thing its main
// or TestMain does) asks the kernel for SIGKILL when its parent dies
// (PR_SET_PDEATHSIG) and replaces itself with the real binary, keeping that
// request across the exec.

// envShimParent holds the pid of the lab process; set, it makes a process
// started through a shim link check that its parent is still that one.
const envShimParent = "FAULTLINE_LAB_SHIM_PARENT"

// shimTarget is the suffix of the file beside a shim link that names the
// binary it stands for.
const shimTarget = ".target"

// shimHooked says RunShim ran in this process: only then may a lab start,
// since its shim links start this very executable.
var shimHooked atomic.Bool

// RunShim must be the first call of main, and of TestMain in tests that
// start a lab: when this process was started through a lab's shim link
// (in place of kube-apiserver or etcd), it asks the kernel for SIGKILL
// when its parent dies and replaces itself with the real binary, never
// returning; otherwise it returns at once. A lab refuses to start in a
// process that has not called it.
func RunShim() {
	shimHooked.Store(true)
	parent := os.Getenv(envShimParent)
	if parent == "" {
		return
	}
	target, err := os.ReadFile(os.Args[0] + shimTarget)
	if err != nil {
		return // not started through a shim: an ordinary child
	}
	// The parent-death signal belongs to the thread that execs.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "faultline lab shim: %v\n", err)
		os.Exit(1)
	}
	// The parent may have died before the request was made.
	if strconv.Itoa(os.Getppid()) != parent {
		os.Exit(1)
	}
	// Recorded for `faultline lab down`, which stops only the processes
	// a lab recorded (exec keeps the pid and the start time).
	if err := recordProcess(os.Args[0] + pidSuffix); err != nil {
		fmt.Fprintf(os.Stderr, "faultline lab shim: %v\n", err)
		os.Exit(1)
	}
	path := string(target)
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if len(kv) < len(envShimParent) || kv[:len(envShimParent)] != envShimParent {
			env = append(env, kv)
		}
	}
	err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), env)
	fmt.Fprintf(os.Stderr, "faultline lab shim: exec %s: %v\n", path, err)
	os.Exit(1)
}

// shim makes, in dir, a link named after the binary at path that starts
// it through the shim, and returns the link's path.
func shim(dir, path string) (string, error) {
	return shimAs(dir, path, filepath.Base(path))
}

// shimAs is shim with a link named name: a binary started twice in one
// lab (a manager after an upgrade) gets a link, and a pid file, of each.
func shimAs(dir, path, name string) (string, error) {
	if !shimHooked.Load() {
		return "", errors.New("lab shim: this program did not call lab.RunShim first in main (or TestMain), so the lab's kube-apiserver and etcd would start it instead of themselves")
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("lab shim: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("lab shim: %w", err)
	}
	link := filepath.Join(dir, name)
	if reusable(link, self, path) {
		// Started again in the same lab (a management plane that stored
		// its state): the pid file is the new process's.
		return link, nil
	}
	if err := os.Symlink(self, link); err != nil {
		return "", fmt.Errorf("lab shim: %w", err)
	}
	if err := os.WriteFile(link+shimTarget, []byte(path), 0o600); err != nil {
		return "", fmt.Errorf("lab shim: %w", err)
	}
	// Children inherit the environment; only a shim link acts on it.
	if err := os.Setenv(envShimParent, strconv.Itoa(os.Getpid())); err != nil {
		return "", fmt.Errorf("lab shim: %w", err)
	}
	return link, nil
}

// reusable tells whether link is a shim link of self to path already.
func reusable(link, self, path string) bool {
	to, err := os.Readlink(link)
	if err != nil || to != self {
		return false
	}
	target, err := os.ReadFile(link + shimTarget)
	return err == nil && string(target) == path
}

// pidSuffix is the suffix of the file beside a shim link that records the
// process started through it: its pid and start time.
const pidSuffix = ".pid"

// recordProcess writes this process's pid and start time to path.
func recordProcess(path string) error {
	start, err := ProcessStart(os.Getpid())
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(fmt.Sprintf("%d %d\n", os.Getpid(), start)), 0o600)
}

// Process is a process a lab started, as its shim recorded it.
type Process struct {
	PID   int
	Start uint64
}

// Alive tells whether the process still runs (the same one: a reused pid
// has another start time).
func (p Process) Alive() bool {
	start, err := ProcessStart(p.PID)
	return err == nil && start == p.Start
}

// Processes lists the processes the lab in dir started through its shims
// (kube-apiserver, etcd), alive or not.
func Processes(dir string) ([]Process, error) {
	files, err := filepath.Glob(filepath.Join(dir, "bin", "*"+pidSuffix))
	if err != nil {
		return nil, err
	}
	var out []Process
	for _, f := range files {
		p, err := readProcess(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// readProcess reads the process record at path.
func readProcess(path string) (Process, error) {
	var p Process
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("lab process record: %w", err)
	}
	if _, err := fmt.Sscanf(string(b), "%d %d", &p.PID, &p.Start); err != nil {
		return p, fmt.Errorf("lab process record %s: %w", path, err)
	}
	return p, nil
}

// killStarted kills, with SIGKILL, the process that the shim link link
// started, if it still runs (its record names it: the lab started it).
func killStarted(link string) error {
	p, err := readProcess(link + pidSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil // it never started
	}
	if err != nil || !p.Alive() {
		return err
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", filepath.Base(link), p.PID, err)
	}
	return nil
}

// ProcessStart is a process's start time in clock ticks after boot, from
// /proc/PID/stat; an error for a process that is gone or a zombie.
func ProcessStart(pid int) (uint64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("pid %d", pid)
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command (field 2) may hold spaces and parentheses: the fields
	// that follow start after its last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field 22 (starttime) is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d has exited", pid)
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, err
	}
	return strconv.ParseUint(f[19], 10, 64)
}
