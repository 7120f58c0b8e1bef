package engine_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/fake"
)

// hostsFake is etcdFake's three control planes laid on ESXi hosts:
// host.fail's calls are recorded, and FailHost powers the host's VMs off.
type hostsFake struct {
	*fake.Provider
	host  map[string]string // VM → host
	mu    sync.Mutex
	calls []string
}

func newHostsFake(host map[string]string) *hostsFake {
	return &hostsFake{Provider: etcdFake(), host: host}
}

func (h *hostsFake) HostOf(ctx context.Context, obj providers.Object) (providers.Object, []providers.Object, error) {
	name := h.host[obj.Name]
	all, err := h.Resolve(ctx, providers.Selector{VM: "*"})
	if err != nil {
		return providers.Object{}, nil, err
	}
	var down []providers.Object
	var ids []string
	for _, o := range all {
		if h.host[o.Name] == name {
			down = append(down, o)
			ids = append(ids, o.ID)
		}
	}
	host := providers.Object{Kind: "HostSystem", Name: name, ID: name, Attributes: map[providers.Attribute]string{providers.AttrVMs: strings.Join(ids, ",")}}
	return host, down, nil
}

func (h *hostsFake) record(call string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, call)
}

func (h *hostsFake) FailHost(ctx context.Context, host providers.Object, vms []string) error {
	h.record("fail " + host.Name + " " + strings.Join(vms, ","))
	for _, vm := range vms {
		if err := h.PowerOff(ctx, providers.Object{Kind: "VirtualMachine", Name: vm, ID: vm}); err != nil {
			return err
		}
	}
	return nil
}

func (h *hostsFake) RestoreHost(ctx context.Context, host providers.Object, vms []string) error {
	h.record("restore " + host.Name + " " + strings.Join(vms, ","))
	for _, vm := range vms {
		if err := h.PowerOn(ctx, providers.Object{Kind: "VirtualMachine", Name: vm, ID: vm}); err != nil {
			return err
		}
	}
	return nil
}

func (h *hostsFake) EnterMaintenance(_ context.Context, host providers.Object, _ []string) error {
	h.record("maintenance " + host.Name)
	return nil
}

func (h *hostsFake) ExitMaintenance(_ context.Context, host providers.Object, _ []string) error {
	h.record("exit " + host.Name)
	return nil
}

const hostFailSteps = `
    - name: fail
      inject: {fault: host.fail, target: victims}
    - name: see-off
      observe:
        phases:
          - {name: off, when: {probe: vm-powered-off, target: victims}, within: 5s}`

// host.fail counts every etcd member on the host, not only the target's:
// failing the host of cp-1, which cp-2 shares, would take 2 of 3 members.
func TestHostFailCountsTheHost(t *testing.T) {
	t.Parallel()
	one := `
    - name: victims
      select: {vm: cp-1}`
	p := newHostsFake(map[string]string{"cp-1": "h1", "cp-2": "h1", "cp-3": "h2"})
	res, _ := run(t, context.Background(), parseScenario(t, "[Hosts, VMPower]", "", one, hostFailSteps), p)
	want := "refused: step fail would have 2 of the 3 etcd members of default/cp down at once (cp-1, cp-2)"
	if res.Verdict != engine.Error || !strings.Contains(res.Reason, want) || len(p.calls) != 0 {
		t.Errorf("verdict %s (%s), calls %v; want error saying %q and no call", res.Verdict, res.Reason, p.calls, want)
	}
	p = newHostsFake(map[string]string{"cp-1": "h1", "cp-2": "h2", "cp-3": "h3"})
	if res, _ := run(t, context.Background(), parseScenario(t, "[Hosts, VMPower]", "", one, hostFailSteps), p); res.Verdict != engine.Pass {
		t.Errorf("cp-1 alone on its host: verdict %s (%s)", res.Verdict, res.Reason)
	}
}

// Two targets on one host fail it once; the journal records the host with
// its VMs, before the fault, and the undo restores those.
func TestHostFailOncePerHost(t *testing.T) {
	t.Parallel()
	two := `
    - name: victims
      select: {vm: "cp-[12]"}`
	p := newHostsFake(map[string]string{"cp-1": "h1", "cp-2": "h1", "cp-3": "h2"})
	res, journal := run(t, context.Background(), parseScenario(t, "[Hosts, VMPower]", "  safety: {acceptQuorumLoss: true}", two, hostFailSteps), p)
	if res.Verdict != engine.Pass {
		t.Fatalf("verdict %s (%s)", res.Verdict, res.Reason)
	}
	if want := []string{"fail h1 cp-1,cp-2", "restore h1 cp-1,cp-2"}; !slices.Equal(p.calls, want) {
		t.Errorf("calls %v, want %v", p.calls, want)
	}
	entries, err := engine.ReadJournal(journal)
	if err != nil || len(entries) == 0 {
		t.Fatalf("journal: %v %v", entries, err)
	}
	first := entries[0]
	if first.Op != engine.OpInject || first.Target == nil || first.Target.String() != "HostSystem/h1" || first.Undo == nil || first.Undo.Action != "host.restore" || first.Undo.Params["vms"] != "cp-1,cp-2" {
		t.Errorf("first journal entry %+v; want the inject of HostSystem/h1 with undo host.restore of cp-1,cp-2", first)
	}
}
