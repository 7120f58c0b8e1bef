package providers_test

import (
	"context"
	"errors"
	"testing"

	"github.com/faultline-dev/faultline/providers"
)

// bare implements Provider and nothing else.
type bare struct{}

func (bare) Name() string { return "bare" }
func (bare) Resolve(context.Context, providers.Selector) ([]providers.Object, error) {
	return nil, nil
}

// machines has ClusterAPI, and so Nodes through its Machines.
type machines struct{ bare }

func (machines) Machine(context.Context, providers.Object) (providers.MachineState, error) {
	return providers.MachineState{Name: "m", NodeReady: "True"}, nil
}
func (machines) Replacements(context.Context, providers.Object) ([]providers.MachineState, error) {
	return nil, nil
}
func (machines) Owner(context.Context, providers.Object) (providers.OwnerState, error) {
	return providers.OwnerState{}, nil
}
func (machines) APIServer(context.Context, providers.Object) error { return nil }

// noGuest implements NodeKubelet but cannot use it as configured.
type noGuest struct{ bare }

func (noGuest) SetKubelet(context.Context, providers.Object, bool) error { return nil }
func (noGuest) CapabilityUnavailable(c providers.Capability) error {
	return errors.New("no guest login: " + string(c) + " " + providers.ErrUnsupported.Error())
}

func TestCapabilitiesDeriveFromInterfaces(t *testing.T) {
	t.Parallel()
	seen := map[providers.Capability]bool{}
	for _, c := range providers.Capabilities() {
		if seen[c] {
			t.Errorf("capability %s listed twice", c)
		}
		seen[c] = true
		if !providers.KnownCapability(c) {
			t.Errorf("KnownCapability(%s) = false", c)
		}
		if providers.HasCapability(bare{}, c) {
			t.Errorf("a provider with no capability interface has %s", c)
		}
		want := c == providers.CapClusterAPI || c == providers.CapNodes
		if got := providers.HasCapability(machines{}, c); got != want {
			t.Errorf("ClusterAPI provider: HasCapability(%s) = %v, want %v", c, got, want)
		}
	}
	if providers.KnownCapability("Teleport") {
		t.Error("KnownCapability(Teleport) = true")
	}
}

func TestAsNamesTheMissingCapability(t *testing.T) {
	t.Parallel()
	if _, err := providers.As[providers.VMPower](bare{}, providers.CapVMPower); !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("As on a provider without VMPower: %v, want ErrUnsupported", err)
	}
	if providers.HasCapability(noGuest{}, providers.CapNodeKubelet) {
		t.Error("a provider whose condition refuses NodeKubelet has it")
	}
	_, err := providers.As[providers.NodeKubelet](noGuest{}, providers.CapNodeKubelet)
	if err == nil || err.Error() != "provider bare lacks capability NodeKubelet: no guest login: NodeKubelet unsupported by this provider" {
		t.Fatalf("As with an unavailable capability: %v", err)
	}
	n, err := providers.NodesOf(machines{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := n.NodeOf(context.Background(), providers.Object{}); err != nil || st.NodeReady != "True" {
		t.Fatalf("NodesOf(ClusterAPI).NodeOf = %+v, %v", st, err)
	}
}

func TestRequireControlPlane(t *testing.T) {
	t.Parallel()
	cp := providers.Object{Kind: "Machine", Name: "cp-0", Attributes: map[providers.Attribute]string{providers.AttrRole: providers.RoleControlPlane}}
	if err := providers.RequireControlPlane(cp, "etcd"); err != nil {
		t.Fatal(err)
	}
	w := providers.Object{Kind: "Machine", Name: "md-0", Attributes: map[providers.Attribute]string{providers.AttrRole: providers.RoleWorker}}
	if err := providers.RequireControlPlane(w, "etcd"); err == nil || err.Error() != "Machine/md-0 is a worker: only control-plane nodes run etcd" {
		t.Fatalf("RequireControlPlane(worker) = %v", err)
	}
}
