package vsphere_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/faultline-dev/faultline/providers"
)

// TestIntegrationVMLease: two runners (two sessions) against one vcsim
// over SOAP: the second is refused the VM the first leased, naming the
// holder; the first's release frees it; a lease whose holder stopped
// renewing (killed) is taken over once its duration passed; of two
// runners taking one free VM at once, exactly one gets it.
func TestIntegrationVMLease(t *testing.T) {
	sim := startSim(t)
	ctx := t.Context()
	a, b := connect(t, ctx, sim.Config()), connect(t, ctx, sim.Config())
	vm := resolveOne(t, ctx, a, providers.Selector{VM: "DC0_H0_VM0"})

	release, err := a.AcquireLease(ctx, vm, "runner A", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Held past its first duration: A renews it.
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Second, false, func(ctx context.Context) (bool, error) {
		_, err := b.AcquireLease(ctx, vm, "runner B", 3*time.Second)
		if !errors.Is(err, providers.ErrLeaseHeld) || !strings.Contains(err.Error(), "runner A") {
			return false, err
		}
		return false, nil // keeps being refused until the timeout
	}); !wait.Interrupted(err) {
		t.Fatalf("B while A renews: %v, want refused naming runner A throughout", err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	relB, err := b.AcquireLease(ctx, vm, "runner B", 3*time.Second)
	if err != nil {
		t.Fatalf("B after A let go: %v", err)
	}
	// B "killed": its renewals stop (the release's context is already
	// over, so nothing is cleared), and its lease expires.
	done, cancel := context.WithCancel(ctx)
	cancel()
	_ = relB(done)
	var relA func(context.Context) error
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		relA, err = a.AcquireLease(ctx, vm, "runner A", 3*time.Second)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("A did not take over the lease B stopped renewing: %v", err)
	}
	if err := relA(ctx); err != nil {
		t.Fatal(err)
	}

	// Two at once on a free VM: one holds it, the other is refused.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	rels := make([]func(context.Context) error, 2)
	for i, p := range []interface {
		AcquireLease(context.Context, providers.Object, string, time.Duration) (func(context.Context) error, error)
	}{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rels[i], errs[i] = p.AcquireLease(ctx, vm, []string{"runner A", "runner B"}[i], 30*time.Second)
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("two runners at once: %v, %v; want exactly one refused", errs[0], errs[1])
	}
	for i, rel := range rels {
		if errs[i] == nil {
			if err := rel(ctx); err != nil {
				t.Error(err)
			}
		} else if !errors.Is(errs[i], providers.ErrLeaseHeld) {
			t.Errorf("runner %d: %v, want ErrLeaseHeld", i, errs[i])
		}
	}
}
