package providers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// SharedLeases is implemented by a provider whose targets every runner
// that reaches them can see a lease on: a Cluster API target's Lease in its
// management cluster, where the flock of one host (the engine's own lease
// files) does not reach a runner on another machine.
type SharedLeases interface {
	// AcquireLease leases obj to holder for duration and renews the lease
	// every third of it until release is called, which lets it go. A
	// lease another holder renewed within its duration is refused with
	// ErrLeaseHeld, naming that holder; one that expired (its holder
	// stopped renewing: killed, or cut off) is taken over.
	AcquireLease(ctx context.Context, obj Object, holder string, duration time.Duration) (release func(context.Context) error, err error)
}

// ErrLeaseHeld is a shared lease another runner holds; its error says
// by whom.
var ErrLeaseHeld = errors.New("a shared lease another runner holds")

// RenewUntilReleased runs renew (which renews a lease until its context
// ends) in a goroutine of its own, and returns the release of a
// SharedLeases lease: it stops the renewals, waits for them, then lets
// the lease go with release.
func RenewUntilReleased(ctx context.Context, renew func(context.Context), release func(context.Context) error) func(context.Context) error {
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		renew(rctx)
	}()
	return func(ctx context.Context) error {
		stop()
		<-done
		return release(ctx)
	}
}

// Holder names a run to the runners that see its shared leases: its pid
// and host, scenario and journal.
func Holder(scenario, journal string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "an unnamed host"
	}
	return fmt.Sprintf("faultline pid %d on %s, scenario %s, journal %s", os.Getpid(), host, scenario, journal)
}

// HolderGone tells whether the run holder names (Holder's words) ran on
// this host and its process is gone: its lease is stale before it
// expires. A holder of another host, or a pid that still runs (perhaps
// reused), is not gone.
func HolderGone(holder string) bool {
	var pid int
	var host string
	if _, err := fmt.Sscanf(holder, "faultline pid %d on %s", &pid, &host); err != nil || pid <= 0 {
		return false
	}
	this, err := os.Hostname()
	if err != nil || strings.TrimSuffix(host, ",") != this {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
