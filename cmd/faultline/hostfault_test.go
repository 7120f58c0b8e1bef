package main

import (
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

// TestIntegrationCrashHostFaults kills a run whose host fault holds
// (vcsim in its own process, as a vCenter would be): 'faultline recover'
// must undo it from the journal: a failed host connected again with its
// VMs powered on, a host in maintenance mode taken out of it.
func TestIntegrationCrashHostFaults(t *testing.T) {
	bin, env, p := crashEnv(t)
	for _, tc := range []struct {
		fault, undo string
		faulted     func(types.HostRuntimeInfo) bool
	}{
		{"host.fail", "host.restore", func(h types.HostRuntimeInfo) bool {
			return h.ConnectionState == types.HostSystemConnectionStateDisconnected
		}},
		{"host.maintenance", "host.exit-maintenance", func(h types.HostRuntimeInfo) bool { return h.InMaintenanceMode }},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			vms, err := p.Resolve(t.Context(), providers.Selector{VM: "DC0_C0_RP0_VM0"})
			if err != nil || len(vms) != 1 {
				t.Fatalf("resolve: %v %v", vms, err)
			}
			host, on, err := p.HostOf(t.Context(), vms[0])
			if err != nil {
				t.Fatal(err)
			}
			scenario := filepath.Join(t.TempDir(), "hold-host.yaml")
			if err := os.WriteFile(scenario, []byte(holdWith("Hosts, VMPower", "DC0_C0_RP0_VM0", "host-down", tc.fault)), 0o600); err != nil {
				t.Fatal(err)
			}
			artDir := t.TempDir()
			run := exec.Command(bin, "run", scenario, "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--artifacts", artDir)
			run.Env = env
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			journal := filepath.Join(artDir, "journal.jsonl")
			waitFor(t, 30*time.Second, "the run to journal and apply "+tc.fault, func() bool {
				entries, err := engine.ReadJournal(journal)
				return err == nil && len(engine.Pending(entries)) == 1 && tc.faulted(hostState(t, p, host))
			})
			if err := run.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = run.Wait()
			rec := exec.Command(bin, "recover", "--allow-vcenter", "127.0.0.1")
			rec.Env = append(slices.Clone(env), "ARTIFACTS="+artDir)
			out, err := rec.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.fault+": undone ("+tc.undo+")") {
				t.Fatalf("recover: %v\n%s", err, out)
			}
			if st := hostState(t, p, host); tc.faulted(st) || st.ConnectionState != types.HostSystemConnectionStateConnected {
				t.Errorf("host %s after recover: %+v; want connected and out of maintenance", host.Name, st)
			}
			for _, vm := range on {
				if st, err := p.PowerState(t.Context(), vm); err != nil || st != providers.PoweredOn {
					t.Errorf("%s is %s (%v) after recover, want poweredOn", vm.Name, st, err)
				}
			}
		})
	}
}

func hostState(t *testing.T, p *vsphere.Provider, host providers.Object) types.HostRuntimeInfo {
	t.Helper()
	st, err := p.HostState(t.Context(), host)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
