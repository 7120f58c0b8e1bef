package providers

import (
	"context"
	"errors"
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
