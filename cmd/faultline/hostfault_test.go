package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// holdHostScenario fails the host of one of vcsim's cluster VMs, then
// waits for something that never happens.
const holdHostScenario = `apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: hold-host}
spec:
  requires: [Hosts, VMPower]
  pollInterval: 200ms
  targets:
    - {name: victim, select: {vm: DC0_C0_RP0_VM0}}
  steps:
    - name: host-down
      inject: {fault: host.fail, target: victim}
    - name: wait
      observe:
        phases:
          - {name: suspended, when: {probe: vm-suspended, target: victim}}
`

// TestIntegrationCrashHostFail kills a run whose host.fail holds (vcsim
// in its own process, as a vCenter would be): 'faultline recover' must
// connect the host again and power its VMs back on, from the journal.
func TestIntegrationCrashHostFail(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds faultline and runs vcsim in another process")
	}
	bin := buildFaultline(t)
	env, _ := startVCSimProcess(t, bin)
	env = append(env, engine.EnvJournalKey+"="+filepath.Join(t.TempDir(), "journal.key"))
	scenario := filepath.Join(t.TempDir(), "hold-host.yaml")
	if err := os.WriteFile(scenario, []byte(holdHostScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := vsphere.ConfigFromEnv(func(k string) string { return envValue(env, k) })
	if err != nil {
		t.Fatal(err)
	}
	p, err := vsphere.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	vms, err := p.Resolve(t.Context(), providers.Selector{VM: "DC0_C0_RP0_VM0"})
	if err != nil || len(vms) != 1 {
		t.Fatalf("resolve: %v %v", vms, err)
	}
	host, on, err := p.HostOf(t.Context(), vms[0])
	if err != nil {
		t.Fatal(err)
	}

	artDir := t.TempDir()
	run := exec.Command(bin, "run", scenario, "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--artifacts", artDir)
	run.Env = env
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(artDir, "journal.jsonl")
	waitFor(t, 30*time.Second, "the run to journal and fail the host", func() bool {
		entries, err := engine.ReadJournal(journal)
		return err == nil && len(engine.Pending(entries)) == 1 && hostConnection(t, p, host) == types.HostSystemConnectionStateDisconnected
	})
	if err := run.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	for _, vm := range on {
		if st, _ := p.PowerState(t.Context(), vm); st != providers.PoweredOff {
			t.Fatalf("after SIGKILL %s is %s; the test needs it left off", vm.Name, st)
		}
	}
	rec := exec.Command(bin, "recover", "--allow-vcenter", "127.0.0.1")
	rec.Env = append(slices.Clone(env), "ARTIFACTS="+artDir)
	out, err := rec.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "host.fail: undone (host.restore)") {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	if st := hostConnection(t, p, host); st != types.HostSystemConnectionStateConnected {
		t.Errorf("host %s is %s after recover, want connected", host.Name, st)
	}
	for _, vm := range on {
		if st, err := p.PowerState(t.Context(), vm); err != nil || st != providers.PoweredOn {
			t.Errorf("%s is %s (%v) after recover, want poweredOn", vm.Name, st, err)
		}
	}
}

func hostConnection(t *testing.T, p *vsphere.Provider, host providers.Object) types.HostSystemConnectionState {
	t.Helper()
	st, err := p.HostState(t.Context(), host)
	if err != nil {
		t.Fatal(err)
	}
	return st.ConnectionState
}
