package capi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestIntegrationSharedLeases: two runners (two providers) on one real API
// server lease one Machine. The second is refused naming the first while
// the first renews its Lease past its duration; a Lease whose holder
// stopped renewing (killed with its machine) is taken over once it has
// expired; a released lease is gone, and a taken-over one is not deleted
// by its former holder.
func TestIntegrationSharedLeases(t *testing.T) {
	c, err := client.New(labtest.APIServer(t).Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := capi.New(c), capi.New(c)
	m := providers.Object{Kind: "Machine", Name: "lab-md-0-x", ID: "uid-1", Attributes: map[providers.Attribute]string{providers.AttrNamespace: "default"}}
	const d = 2 * time.Second

	releaseA, err := a.AcquireLease(ctx, m, "runner A", d)
	if err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "default", Name: "faultline-machine-lab-md-0-x"}
	// Past two durations, A has renewed it: B is still refused.
	deadline := time.Now().Add(2*d + 500*time.Millisecond)
	for time.Now().Before(deadline) {
		_, err := b.AcquireLease(ctx, m, "runner B", d)
		if !errors.Is(err, providers.ErrLeaseHeld) || !strings.Contains(err.Error(), "held by runner A") {
			t.Fatalf("B while A renews: %v, want held by runner A", err)
		}
		var l coordinationv1.Lease
		if err := c.Get(ctx, key, &l); err != nil {
			t.Fatal(err)
		}
		if time.Since(l.Spec.RenewTime.Time) > d {
			t.Fatalf("Lease renewed last at %s, more than %s ago", l.Spec.RenewTime.Time, d)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
	if err := releaseA(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &coordinationv1.Lease{}); err == nil {
		t.Fatal("the Lease is still there after A let it go")
	}

	// A holder killed with its machine: its Lease stays, unrenewed.
	past := metav1.NewMicroTime(time.Now().Add(-time.Minute))
	dead := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("runner C"), LeaseDurationSeconds: ptr.To(int32(30)), RenewTime: &past}}
	if err := c.Create(ctx, dead); err != nil {
		t.Fatal(err)
	}
	releaseB, err := b.AcquireLease(ctx, m, "runner B", d)
	if err != nil {
		t.Fatalf("B on an expired Lease: %v, want it taken over", err)
	}
	var l coordinationv1.Lease
	if err := c.Get(ctx, key, &l); err != nil || ptr.Deref(l.Spec.HolderIdentity, "") != "runner B" {
		t.Fatalf("Lease %+v (%v), want held by runner B", l.Spec, err)
	}
	if _, err := a.AcquireLease(ctx, m, "runner A", d); !errors.Is(err, providers.ErrLeaseHeld) || !strings.Contains(err.Error(), "runner B") {
		t.Fatalf("A while B holds: %v", err)
	}
	if err := releaseB(ctx); err != nil {
		t.Fatal(err)
	}

	// Not a Machine: no shared lease (the host's lease still holds it).
	if _, err := a.AcquireLease(ctx, providers.Object{Kind: "VirtualMachine", Name: "vm-1"}, "runner A", d); !errors.Is(err, providers.ErrUnsupported) {
		t.Errorf("a VM without a Cluster: %v, want ErrUnsupported", err)
	}
}
