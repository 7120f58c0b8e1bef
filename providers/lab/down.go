package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultline-dev/faultline/providers/lab/leftovers"
	"github.com/faultline-dev/faultline/providers/lab/realnodes"
)

// Down stops the owner of the lab r records if it still runs (SIGTERM,
// then SIGKILL after 30 s); then, as after a crash, kills what the lab
// recorded starting (kube-apiserver, etcd) if it still runs, removes the
// real nodes' containers and network, the folder and the record. say is
// told each thing done, as a line for people.
func Down(r Record, say func(string)) error {
	if r.OwnerAlive() {
		say(fmt.Sprintf("stopping lab %s (pid %d)", r.Name(), r.PID))
		_ = syscall.Kill(r.PID, syscall.SIGTERM)
		waitExit(r.PID, 30*time.Second)
		if r.OwnerAlive() {
			_ = syscall.Kill(r.PID, syscall.SIGKILL)
			waitExit(r.PID, 5*time.Second)
		}
	}
	// Only what the lab recorded starting (its kube-apiserver and
	// etcd, which die with their owner anyway), never a process found by
	// its command line: a user's `less apiserver.log` names the folder too.
	procs, err := Processes(r.Dir)
	if err != nil {
		return err
	}
	for _, p := range procs {
		if p.Alive() {
			say(fmt.Sprintf("killing leftover process %d", p.PID))
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	// Its real nodes' containers and network, recorded in the folder as
	// they were made.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := realnodes.Remove(ctx, r.Dir); err != nil {
		return fmt.Errorf("remove the real nodes of lab %s: %w", r.Name(), err)
	}
	if err := leftovers.Remove(r.Dir, say); err != nil {
		return fmt.Errorf("remove what lab %s made outside its folder: %w", r.Name(), err)
	}
	if err := os.RemoveAll(r.Dir); err != nil {
		return fmt.Errorf("remove lab folder %s: %w", r.Dir, err)
	}
	if err := RemoveRecord(r); err != nil {
		return err
	}
	say(fmt.Sprintf("lab %s down; removed %s", r.Name(), r.Dir))
	return nil
}

// waitExit waits until pid exits or the timeout passes, on a pidfd: the
// kernel says when, no polling.
func waitExit(pid int, timeout time.Duration) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already gone
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == nil && n > 0 {
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
