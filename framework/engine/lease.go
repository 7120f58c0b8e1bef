package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers"
)

// A run leases every object it will fault before the first inject and
// holds the leases until its faults are undone, so that two runs never
// fault one target at once: the second would find the first's fault in
// place, fail to apply its own, and "undo" it in the middle of the
// first's. A lease is a file per target in a folder of this host's
// (RunInput.Leases), locked with flock(2): the lock goes with the process
// that holds it, so a run killed with SIGKILL leaves no stale lease. A
// run removes its lease files when it lets them go, while it still holds
// their locks; a run that opened one of them just before then finds, once
// it has the lock, that the path no longer names the file it locked, and
// opens it again.

// A provider whose targets other hosts reach too (providers.SharedLeases:
// a Cluster API management cluster) also leases each one where every
// runner sees it, renewed every third of SharedLeaseDuration: a runner
// killed with its machine holds it no longer than that.

// SharedLeaseDuration is how long a shared lease holds unless renewed.
const SharedLeaseDuration = 30 * time.Second

// lease takes the run's leases on what sc faults, on this host (the
// lease folder, when set) and where the provider shares them, and returns
// what lets them all go.
func (r *run) lease(ctx context.Context, sc *scenario.Scenario) (func(), error) {
	objs := r.faultTargets(sc)
	var local leases
	if r.in.Leases != "" {
		var err error
		local, err = takeLeases(r.in.Leases, r.ref(), objs, LeaseHolder{PID: os.Getpid(), Scenario: sc.Metadata.Name, Journal: r.in.Journal.Path()})
		if err != nil {
			return nil, err
		}
	}
	shared, err := takeSharedLeases(ctx, r.in.Provider, objs, providers.Holder(sc.Metadata.Name, r.in.Journal.Path()))
	if err != nil {
		return nil, errors.Join(err, local.release())
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := errors.Join(shared(rctx), local.release()); err != nil {
			r.in.Log.Error(err, "releasing target leases")
		}
	}, nil
}

// takeSharedLeases leases each of objs where p shares leases, or none;
// an object p cannot lease (not a Cluster API Machine) has the host's
// lease only.
func takeSharedLeases(ctx context.Context, p providers.Provider, objs []providers.Object, holder string) (func(context.Context) error, error) {
	var releases []func(context.Context) error
	releaseAll := func(ctx context.Context) error {
		var errs []error
		for _, rel := range releases {
			errs = append(errs, rel(ctx))
		}
		return errors.Join(errs...)
	}
	sl, ok := p.(providers.SharedLeases)
	if !ok {
		return releaseAll, nil
	}
	for _, obj := range objs {
		rel, err := sl.AcquireLease(ctx, obj, holder, SharedLeaseDuration)
		if errors.Is(err, providers.ErrUnsupported) {
			continue
		}
		if err != nil {
			if errors.Is(err, providers.ErrLeaseHeld) {
				err = fmt.Errorf("%w: %w", ErrTargetLeased, err)
			}
			return nil, errors.Join(err, releaseAll(context.WithoutCancel(ctx)))
		}
		releases = append(releases, rel)
	}
	return releaseAll, nil
}

// ErrTargetLeased is a target another run holds.
var ErrTargetLeased = errors.New("target held by another run")

// LeaseHolder is what a lease file says of the run holding it.
type LeaseHolder struct {
	PID      int       `json:"pid"`
	Scenario string    `json:"scenario"`
	Journal  string    `json:"journal"`
	Target   string    `json:"target"`
	Since    time.Time `json:"since"`
}

// DefaultLeases is the lease folder of this user: faultline/leases in the
// user's cache folder.
func DefaultLeases() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("lease folder: %w", err)
	}
	return filepath.Join(dir, "faultline", "leases"), nil
}

// leaseKey names the lease of obj reached through ref: the provider and
// the endpoint it reaches (ProviderRef.Target, as leaseEndpoint spells
// it), and the object's identity there.
func leaseKey(ref providers.ProviderRef, obj providers.Object) string {
	h := sha256.New()
	for _, s := range []string{ref.Name, ref.Target, obj.Kind, obj.ID, obj.Name} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// leaseEndpoint is the endpoint a provider's target URL reaches, as one
// spelling: its host resolved to an address (the first IPv4 one, else
// the first IPv6, in sorted order) and its port, the scheme's default
// when unsaid; so https://localhost/sdk and https://127.0.0.1:443 are
// one vCenter. A target that is no URL (kind-NAME), or whose host does
// not resolve within a second, stays as spelled, lowercased.
func leaseEndpoint(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return target
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	if ip := net.ParseIP(host); ip != nil {
		return net.JoinHostPort(ip.String(), port)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return net.JoinHostPort(host, port)
	}
	slices.SortFunc(ips, func(a, b net.IP) int {
		if a4, b4 := a.To4() != nil, b.To4() != nil; a4 != b4 {
			if a4 {
				return -1
			}
			return 1
		}
		return strings.Compare(a.String(), b.String())
	})
	return net.JoinHostPort(ips[0].String(), port)
}

// leases are the leases a run holds: their files, open and locked.
type leases []*os.File

// take leases each of objs in dir for holder, or none: a target another
// run holds is ErrTargetLeased, naming the holder.
func takeLeases(dir string, ref providers.ProviderRef, objs []providers.Object, holder LeaseHolder) (leases, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lease folder: %w", err)
	}
	var held leases
	// Resolved once: the targets of one run share its endpoint.
	ref.Target = leaseEndpoint(ref.Target)
	for _, obj := range objs {
		path := filepath.Join(dir, leaseKey(ref, obj))
		f, err := lockLease(path)
		if errors.Is(err, ErrTargetLeased) {
			return nil, errors.Join(fmt.Errorf("%w: %s is held by %s", ErrTargetLeased, obj, readHolder(path)), held.release())
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("lease of %s: %w", obj, err), held.release())
		}
		holder.Target, holder.Since = obj.String(), time.Now()
		if err := writeHolder(f, holder); err != nil {
			return nil, errors.Join(fmt.Errorf("lease of %s: %w", obj, err), leases{f}.release(), held.release())
		}
		held = append(held, f)
	}
	return held, nil
}

// lockTries bounds how often lockLease opens the lease file again after
// finding it removed by the run that held it.
const lockTries = 10

// lockLease opens the lease file at path and locks it without waiting:
// ErrTargetLeased when another run holds it. The lock is only good while
// path still names the file locked: a run letting its lease go removes
// the file before it unlocks it.
func lockLease(path string) (*os.File, error) {
	for range lockTries {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			return nil, errors.Join(ErrTargetLeased, f.Close())
		}
		ok, err := stillAt(f, path)
		if err != nil {
			return nil, errors.Join(err, f.Close())
		}
		if ok {
			return f, nil
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s was removed %d times while it was being locked", path, lockTries)
}

// writeHolder replaces the lease file's content with h.
func writeHolder(f *os.File, h LeaseHolder) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	return err
}

// readHolder describes the run holding the lease at path.
func readHolder(path string) string {
	b, err := regularfile.Read(path, regularfile.Small)
	var h LeaseHolder
	if err != nil || json.Unmarshal(b, &h) != nil {
		return "another run (its lease file cannot be read)"
	}
	return fmt.Sprintf("the run of scenario %s (pid %d, journal %s) since %s", h.Scenario, h.PID, h.Journal, h.Since.Format(time.RFC3339))
}

// stillAt says whether path still names the open file f.
func stillAt(f *os.File, path string) (bool, error) {
	open, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(open, now), nil
}

// release removes, unlocks and closes every lease file.
func (l leases) release() error {
	var errs []error
	for _, f := range l {
		// Removed while still locked: a run that opened it meanwhile
		// finds it gone once it has the lock (lockLease).
		if err := os.Remove(f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		errs = append(errs, unix.Flock(int(f.Fd()), unix.LOCK_UN), f.Close())
	}
	return errors.Join(errs...)
}
