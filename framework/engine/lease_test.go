package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/providers"
)

// A lease let go leaves no file behind, and the target is free again.
func TestLeaseReleaseRemovesFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ref := providers.ProviderRef{Name: "fake", Target: "here"}
	objs := []providers.Object{{Kind: "VirtualMachine", Name: "vm-a"}, {Kind: "VirtualMachine", Name: "vm-b"}}
	held, err := takeLeases(dir, ref, objs, LeaseHolder{PID: os.Getpid(), Scenario: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := takeLeases(dir, ref, objs[1:], LeaseHolder{Scenario: "other"}); !errors.Is(err, ErrTargetLeased) {
		t.Fatalf("second lease of vm-b: %v, want ErrTargetLeased", err)
	}
	if err := held.release(); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("lease folder after release: %v (%v), want empty", entries, err)
	}
	again, err := takeLeases(dir, ref, objs, LeaseHolder{Scenario: "s"})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	if err := again.release(); err != nil {
		t.Fatal(err)
	}
}

// A lease file opened just before its holder removed it is not the lease
// any more, nor is it once another run has made the path anew.
func TestStillAt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lease")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	f := open()
	if ok, err := stillAt(f, path); !ok || err != nil {
		t.Fatalf("the file just opened: %t, %v", ok, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if ok, err := stillAt(f, path); ok || err != nil {
		t.Errorf("after its removal: %t, %v; want false", ok, err)
	}
	open()
	if ok, err := stillAt(f, path); ok || err != nil {
		t.Errorf("after the path was made anew: %t, %v; want false", ok, err)
	}
}

// Two spellings of one vCenter are one target: a run given
// https://localhost:PORT/sdk and one given https://127.0.0.1:PORT cannot
// fault one VM at once (before, the lease was keyed by the URL as
// spelled). Another port is another endpoint.
func TestLeaseKeyedByEndpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	vm := []providers.Object{{Kind: "VirtualMachine", ID: "vm-42", Name: "lab-md-0-x"}}
	held, err := takeLeases(dir, providers.ProviderRef{Name: "vsphere", Target: "https://localhost:8989/sdk"}, vm, LeaseHolder{Scenario: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	for _, target := range []string{"https://127.0.0.1:8989", "https://LOCALHOST:8989/sdk/"} {
		if _, err := takeLeases(dir, providers.ProviderRef{Name: "vsphere", Target: target}, vm, LeaseHolder{Scenario: "b"}); !errors.Is(err, ErrTargetLeased) {
			t.Errorf("%s: %v, want ErrTargetLeased (the same vCenter)", target, err)
		}
	}
	if e1, e2 := leaseEndpoint("https://vc.invalid/sdk"), leaseEndpoint("https://vc.invalid:443"); e1 != e2 {
		t.Error("https://vc.invalid/sdk and https://vc.invalid:443 are two leases")
	}
	other, err := takeLeases(dir, providers.ProviderRef{Name: "vsphere", Target: "https://127.0.0.1:9999/sdk"}, vm, LeaseHolder{Scenario: "c"})
	if err != nil {
		t.Errorf("another port: %v, want its own lease", err)
	} else if err := other.release(); err != nil {
		t.Fatal(err)
	}
}
