package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

const catalogueScenario = "../../scenarios/vm-power-cycle.yaml"

// TestIntegrationRunLab is README's first command: the catalogue scenario on
// the embedded lab, with JSON output.
func TestIntegrationRunLab(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs the embedded lab")
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := execute([]string{"run", catalogueScenario, "--artifacts", dir, "--output", "json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("--output json is not JSON: %v\n%s", err, out.String())
	}
	for _, k := range []string{"scenario", "provider", "verdict", "startedAt", "finishedAt", "phases", "assertions", "faults"} {
		if _, ok := res[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if res["verdict"] != "pass" || res["provider"] != "lab" {
		t.Errorf("verdict %v on %v", res["verdict"], res["provider"])
	}
	phase := res["phases"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "observedAt", "sinceInject", "budget", "ok"} {
		if _, ok := phase[k]; !ok {
			t.Errorf("phase lacks %q: %v", k, phase)
		}
	}
	for _, f := range []string{"result.json", "timeline.jsonl", "journal.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("artifact %s: %v", f, err)
		}
	}
	// What ran where, and the scenario as it was read, to run it again.
	run, _ := res["run"].(map[string]any)
	copied, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if src, err := os.ReadFile(catalogueScenario); err != nil || string(src) != string(copied) {
		t.Errorf("scenario.yaml is not the file that ran (%v)", err)
	}
	if run["replay"] != "faultline run "+filepath.Join(dir, "scenario.yaml") || run["host"] == "" || run["faultline"] == "" {
		t.Errorf("run info %v", run)
	}
}

// queueAdds reads a run's queues.json: each controller's adds.
func queueAdds(t *testing.T, dir string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "queues.json"))
	if err != nil {
		t.Fatal(err)
	}
	var uses []struct {
		Controller string
		Adds       float64
	}
	if err := json.Unmarshal(b, &uses); err != nil {
		t.Fatal(err)
	}
	adds := map[string]float64{}
	for _, u := range uses {
		adds[u.Controller] = u.Adds
	}
	return adds
}

func TestValidateExitCodes(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: mgmt, context: {cluster: c, user: u}}]\ncurrent-context: mgmt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  steps: [{name: a, undo: {fault: nope}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(t.TempDir(), "read-only.yaml")
	if err := os.WriteFile(readOnly, []byte("apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {name: read-only}\nspec:\n  requires: [ClusterAPI]\n  targets: [{name: w, select: {role: worker}}]\n  steps: [{name: a, setup: {require: [{probe: replicas-restored, target: w}]}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Special files that would hold a reader (a FIFO blocks open(2),
	// /dev/zero never ends): each refused at once, exit 2.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	vc := []string{"--provider", "vsphere", "--vcenter-url", "https://vc.example.com", "--allow-vcenter", "vc.example.com", "--vcenter-username", "u"}
	tests := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"validate", fifo}, 2, fifo + ": not a regular file (a FIFO)"},
		{[]string{"run", fifo}, 2, fifo + ": not a regular file (a FIFO)"},
		{[]string{"recover", fifo}, 2, fifo + ": not a regular file (a FIFO)"},
		{[]string{"recover", "--journal-key", fifo}, 2, fifo + ": not a regular file (a FIFO)"},
		{[]string{"recover", "--journal-key", "/dev/zero"}, 2, "/dev/zero: not a regular file (a character device)"},
		{[]string{"recover", "--timeout", "-1s"}, 2, "--timeout -1s: expected a positive duration"},
		{append([]string{"run", catalogueScenario, "--vcenter-password-file", fifo}, vc...), 2, fifo + ": not a regular file (a FIFO)"},
		{append([]string{"run", catalogueScenario, "--vcenter-ca-file", fifo}, vc...), 2, fifo + ": not a regular file (a FIFO)"},
		{append([]string{"run", catalogueScenario, "--vcenter-known-hosts", "/dev/zero"}, vc...), 2, "/dev/zero: not a regular file (a character device)"},
		{append([]string{"run", catalogueScenario, "--vcenter-thumbprint", "zz"}, vc...), 2, `--vcenter-thumbprint: "zz" is not a thumbprint`},
		{append([]string{"run", catalogueScenario, "--kind-cluster", "foo"}, vc...), 2, "--kind-cluster names the cluster of --provider kind; it does nothing with --provider vsphere"},
		{append([]string{"run", catalogueScenario, "--artifacts", "/proc/self/x"}, vc...), 2, "--artifacts /proc/self/x: mkdir /proc/self/x"},
		{append([]string{"run", catalogueScenario, "--summary", "/proc/self/x"}, vc...), 2, "--summary /proc/self/x: cannot be written"},
		{[]string{"run", catalogueScenario, "--provider", "capi", "--kubeconfig", fifo}, 2, fifo + ": not a regular file (a FIFO)"},
		{[]string{"validate", catalogueScenario}, 0, ""},
		{[]string{"validate", "vm-power-cycle"}, 0, ""},
		{[]string{"validate", bad}, 2, bad + `:5:28: spec.steps[0].undo.fault: no inject step "nope" before this step`},
		{[]string{"validate", "no-such-scenario"}, 2, `no scenario "no-such-scenario" in the catalogue`},
		{[]string{"run", catalogueScenario, "--output", "xml"}, 2, `--output "xml": expected text, json or yaml`},
		{[]string{"run", catalogueScenario, "--set", "novalue"}, 2, `--set "novalue": expected name=value`},
		{[]string{"run", catalogueScenario, "--timeout", "0s"}, 2, "--timeout 0s: expected a positive duration up to 24h0m0s"},
		{[]string{"run", catalogueScenario, "--timeout", "1000000h"}, 2, "--timeout 1000000h0m0s: expected a positive duration up to 24h0m0s"},
		{[]string{"run", catalogueScenario, "--set", "budget.off=1000000h"}, 2, "duration 1000000h is longer than 24h0m0s, the longest a scenario waits"},
		{[]string{"run", catalogueScenario, "--provider", "vsphere", "--vcenter-url", "https://vc.example.com"}, 2, "refusing a destructive run against vCenter https://vc.example.com/sdk: host vc.example.com is not in --allow-vcenter"},
		{[]string{"run", catalogueScenario, "--provider", "vsphere", "--vcenter-url", "not-a-url"}, 2, "vCenter https://not-a-url/sdk: host not-a-url"},
		// A scenario that injects nothing needs no opt-in: it gets past
		// the allow-list to the (unreachable) server.
		{[]string{"run", readOnly, "--provider", "capi", "--kubeconfig", kubeconfig, "--setup-timeout", "10s"}, 3, "127.0.0.1:1"},
		{[]string{"run", catalogueScenario, "--provider", "nope"}, 2, `--provider "nope"`},
		// A dry run refuses what the real run would, before the name is
		// looked up in DNS.
		{[]string{"run", catalogueScenario, "--provider", "vsphere", "--vcenter-url", "not-a-url", "--vcenter-username", "u", "--dry-run"}, 2, "refusing a destructive run against vCenter https://not-a-url/sdk: host not-a-url is not in --allow-vcenter"},
		{[]string{"run", catalogueScenario, "--provider", "capi", "--kubeconfig", kubeconfig, "--dry-run"}, 2, `refusing a destructive run against context "mgmt": it is not in --allow-context`},
		{[]string{"run", catalogueScenario, "--provider", "vsphere", "--vcenter-url", "https://vc.example.com", "--allow-vcenter", "vc.example.com"}, 2, "no vCenter username: set --vcenter-username or GOVC_USERNAME"},
		{[]string{"run", catalogueScenario, "--provider", "vsphere", "--vcenter-url", "https://vc.example.com", "--allow-vcenter", "vc.example.com", "--guest-username", "capv"}, 2, `guest login for "capv": no password`},
		{[]string{"run", catalogueScenario, "--provider", "vsphere", "--vcenter-url", "https://vc.example.com", "--allow-vcenter", "vc.example.com", "--guest-username", "root", "--guest-password-file", "/no/such/file"}, 2, "guest password file: open /no/such/file: no such file or directory"},
		{[]string{"run", catalogueScenario, "--provider", "capi", "--kubeconfig", "/no/such/kubeconfig"}, 2, "--kubeconfig /no/such/kubeconfig: open /no/such/kubeconfig: no such file or directory"},
		{[]string{"run", catalogueScenario, "--provider", "capi", "--kubeconfig", kubeconfig, "--context", "nope"}, 2, `kubeconfig context "nope" not found; it has: mgmt`},
		{[]string{"run", catalogueScenario, "--provider", "capi", "--kubeconfig", kubeconfig}, 2, `refusing a destructive run against context "mgmt": it is not in --allow-context`},
		{[]string{"run", "power-off-worker", "--profile", "slow"}, 2, `unknown lab profile "slow": expected one of compressed, real`},
		{[]string{"run", catalogueScenario, "--provider", "vsphere", "--profile", "bogus"}, 2, "--profile sets how the lab runs; it does nothing with --provider vsphere"},
		{[]string{"run", "power-off-worker", "--nodes", "vms"}, 2, `--nodes "vms": expected simulated or containers`},
		{[]string{"run", catalogueScenario, "--provider", "vsphere", "--vcenter-url", "https://vc.example.com", "--allow-vcenter", "vc.example.com", "--vcenter-ca-file", "/no/ca.pem"}, 2, "--vcenter-ca-file: open /no/ca.pem: no such file or directory"},
		{[]string{"run", catalogueScenario, "--provider", "capi", "--kubeconfig", catalogueScenario}, 2, "not a kubeconfig (expected YAML with apiVersion: v1 and kind: Config)"},
		{[]string{"run"}, 2, "run needs a scenario: a file, a folder, a name from 'faultline list', or -l SELECTOR"},
		{[]string{"run", "-l", "tier=nosuch"}, 2, `no scenario of the catalogue matches the selector "tier=nosuch"`},
		{[]string{"run", "-l", "tier in ("}, 2, `--selector "tier in ("`},
		{[]string{"run", "../../scenarios", "--set", "nope=1"}, 2, "--set nope: none of the selected scenarios declares that parameter"},
		{[]string{"run", "no-such.yaml"}, 2, "scenario no-such.yaml: stat no-such.yaml: no such file or directory"},
		{[]string{"run", t.TempDir()}, 2, "no .yaml or .yml file in it"},
		{[]string{"lab", "up", "--wait", "0s"}, 2, "--wait 0s: expected a positive duration, such as 10m"},
		{[]string{"lab", "up", "--pool", "0"}, 2, "--pool 0: expected 1 or more"},
		{[]string{"run", "power-off-worker", "--parallel", "0"}, 2, "--parallel 0: expected 1 or more"},
		{[]string{"run", "power-off-worker", "stop-kubelet-worker", "--parallel", "2", "--provider", "capi", "--kubeconfig", kubeconfig}, 2, "--parallel runs scenarios side by side on clusters of one lab; with --provider capi or --cluster they would share one cluster"},
		{[]string{"run", "power-off-worker", "--lab", "mine", "--nodes", "containers"}, 2, "--nodes does nothing with --lab: the running lab says where and how scenarios run"},
		{[]string{"run", "power-off-worker", "--lab", "no-such-lab"}, 2, `lab "no-such-lab": no`},
		// One the lab would not serve (it runs on a lab of its own,
		// saying why) still needs the lab named to be running.
		{[]string{"run", "upgrade-management-during-remediation", "--lab", "no-such-lab"}, 2, `lab "no-such-lab": no`},
		{[]string{"list", "-l", "seed-003"}, 0, ""},
		{[]string{"list"}, 0, ""},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := execute(tt.args, &out, &errOut)
		if code != tt.code || !strings.Contains(errOut.String(), tt.inStderr) {
			t.Errorf("faultline %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tt.args, " "), code, errOut.String(), tt.code, tt.inStderr)
		}
	}
}

// holdScenario powers a VM off and then waits for something that never
// happens, so the run is still in flight when the test kills it.
var holdScenario = holdWith("VMPower", "DC0_H0_VM0", "off", "vm.power-off")

// holdWith is a scenario named hold that applies fault (step name step,
// requiring capabilities requires) to the VM named vm, then waits for
// something that never happens.
func holdWith(requires, vm, step, fault string) string {
	return fmt.Sprintf(`apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: hold}
spec:
  requires: [%s]
  pollInterval: 200ms
  targets:
    - {name: victim, select: {vm: %s}}
  steps:
    - name: %s
      inject: {fault: %s, target: victim}
    - name: wait
      observe:
        phases:
          - {name: suspended, when: {probe: vm-suspended, target: victim}}
`, requires, vm, step, fault)
}

// crashEnv builds faultline and starts vcsim in its own process, as a
// vCenter would run: the binary, and the environment that reaches the
// vcsim with a journal key of the test's own (a bare recover reads every
// journal recorded beside the key, and the user's holds other tests').
// It also returns a vsphere provider logged in to that vcsim, for the
// test's own reads.
func crashEnv(t *testing.T) (bin string, env []string, p *vsphere.Provider) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: builds faultline and runs vcsim in another process")
	}
	bin = buildFaultline(t)
	env, _ = startVCSimProcess(t, bin)
	cfg, err := vsphere.ConfigFromEnv(func(k string) string { return envValue(env, k) })
	if err != nil {
		t.Fatal(err)
	}
	if p, err = vsphere.New(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Log(err)
		}
	})
	return bin, append(env, engine.EnvJournalKey+"="+filepath.Join(t.TempDir(), "journal.key")), p
}

// TestIntegrationCrash kills a run mid-fault: with SIGKILL, 'faultline
// recover' must power the VM back on; with SIGINT the run must undo by
// itself. vcsim runs in its own process, as a vCenter would.
func TestIntegrationCrash(t *testing.T) {
	bin, env, p := crashEnv(t)
	scenario := filepath.Join(t.TempDir(), "hold.yaml")
	if err := os.WriteFile(scenario, []byte(holdScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	vms, err := p.Resolve(t.Context(), providers.Selector{VM: "DC0_H0_VM0"})
	if err != nil || len(vms) != 1 {
		t.Fatalf("resolve: %v %v", vms, err)
	}
	vm := vms[0]

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			artDir := t.TempDir()
			run := exec.Command(bin, "run", scenario, "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--artifacts", artDir)
			run.Env = env
			var runOut bytes.Buffer
			run.Stdout, run.Stderr = &runOut, &runOut
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			journal := filepath.Join(artDir, "journal.jsonl")
			waitFor(t, 30*time.Second, "the run to journal and apply its fault", func() bool {
				entries, err := engine.ReadJournal(journal)
				state, serr := p.PowerState(t.Context(), vm)
				return err == nil && len(engine.Pending(entries)) == 1 && serr == nil && state == providers.PoweredOff
			})
			if sig == syscall.SIGKILL {
				// A second run on the VM the first holds refuses,
				// naming the holder, and touches nothing.
				second := exec.Command(bin, "run", scenario, "--provider", "vsphere", "--allow-vcenter", "127.0.0.1", "--artifacts", t.TempDir())
				second.Env = env
				out, err := second.CombinedOutput()
				if exit, _ := err.(*exec.ExitError); exit == nil || exit.ExitCode() != exitInfra ||
					!strings.Contains(string(out), "is held by the run of scenario hold (pid "+strconv.Itoa(run.Process.Pid)) {
					t.Errorf("a second run on the held VM: %v\n%s", err, out)
				}
			}
			if err := run.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := run.Wait()
			exit, _ := err.(*exec.ExitError)
			switch sig {
			case syscall.SIGKILL:
				if state, _ := p.PowerState(t.Context(), vm); state != providers.PoweredOff {
					t.Fatalf("after SIGKILL the VM is %s; the test needs it left off", state)
				}
				// With no argument, recover searches $ARTIFACTS at any
				// depth: a single run's --artifacts DIR holds its journal
				// at the top.
				rec := exec.Command(bin, "recover", "--allow-vcenter", "127.0.0.1")
				rec.Env = append(slices.Clone(env), "ARTIFACTS="+artDir)
				out, err := rec.CombinedOutput()
				if err != nil {
					t.Fatalf("recover: %v\n%s", err, out)
				}
				if !strings.Contains(string(out), "recover: 1 journal(s) under "+artDir) || !strings.Contains(string(out), "off/DC0_H0_VM0 vm.power-off: undone (vm.power-on)") {
					t.Errorf("recover printed %q", out)
				}
			case syscall.SIGINT, syscall.SIGHUP:
				// A closed terminal undoes as Ctrl-C does; what the
				// signal cut short is not reported missed.
				if exit == nil || exit.ExitCode() != exitInfra || strings.Contains(runOut.String(), "MISSED") {
					t.Errorf("interrupted run: %v, want exit %d\n%s", err, exitInfra, runOut.String())
				}
				var junit artifacts.JUnitSuites
				b, rerr := os.ReadFile(filepath.Join(artDir, "junit.xml"))
				if rerr != nil || xml.Unmarshal(b, &junit) != nil || len(junit.Suites) != 1 || junit.Suites[0].Failures != 0 || junit.Suites[0].Errors != 1 {
					t.Errorf("junit.xml after %s: %v\n%s", sig, rerr, b)
				}
				b, rerr = os.ReadFile(filepath.Join(artDir, "result.json"))
				if rerr != nil || !strings.Contains(string(b), `"verdict": "interrupted"`) || strings.Contains(string(b), "context canceled") {
					t.Errorf("result.json after %s: %v\n%s", sig, rerr, b)
				}
			}
			if state, err := p.PowerState(t.Context(), vm); err != nil || state != providers.PoweredOn {
				t.Errorf("VM is %s (%v) after %s, want poweredOn\n%s", state, err, sig, runOut.String())
			}
			entries, err := engine.ReadJournal(journal)
			if err != nil || len(engine.Pending(entries)) != 0 {
				t.Errorf("journal still pending after %s: %v %+v", sig, err, entries)
			}
		})
	}
}

// startVCSimProcess runs 'faultline lab vcsim' and returns an environment
// holding its GOVC_* settings, and the process.
func startVCSimProcess(t *testing.T, bin string) ([]string, *exec.Cmd) {
	t.Helper()
	envFile := filepath.Join(t.TempDir(), "vcsim.env")
	cmd := exec.Command(bin, "lab", "vcsim", "--env-file", envFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // waited for by the test
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Log(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Log(err)
		}
	})
	waitFor(t, 30*time.Second, "vcsim to write its settings", func() bool {
		_, err := os.Stat(envFile)
		return err == nil
	})
	f, err := os.Open(envFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := os.Environ()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "export ")
		if !ok {
			t.Fatalf("vcsim's env file: %q is not an export line a shell sources", sc.Text())
		}
		env = append(env, line)
	}
	return env, cmd
}

// `faultline lab vcsim` stops within 5 s of SIGTERM whatever its clients
// do: one holds a request half sent, one waits for property updates that
// never come.
func TestIntegrationVCSimStops(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds faultline and runs vcsim in another process")
	}
	bin := buildFaultline(t)
	env, proc := startVCSimProcess(t, bin)
	cfg, err := vsphere.ConfigFromEnv(func(k string) string { return envValue(env, k) })
	if err != nil {
		t.Fatal(err)
	}
	u, err := cfg.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: roots, ServerName: u.Hostname()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /sdk HTTP/1.1\r\nHost: %s\r\nContent-Type: text/xml\r\nContent-Length: 100000\r\n\r\n<soapenv:Envelope", u.Host); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	vms, err := p.Resolve(ctx, providers.Selector{VM: "DC0_H0_VM0"})
	if err != nil || len(vms) != 1 {
		t.Fatalf("resolve: %v %v", vms, err)
	}
	waiting := make(chan struct{})
	go func() {
		ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: vms[0].ID}
		first := true
		_ = property.Wait(ctx, property.DefaultCollector(p.Client()), ref, []string{"runtime.powerState"}, func([]types.PropertyChange) bool {
			if first {
				first = false
				close(waiting) // the next call waits for a change
			}
			return false
		})
	}()
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the property waiter never got its first update")
	}

	start := time.Now()
	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	select {
	case err := <-exited:
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("lab vcsim took %s to stop, want 5 s at most", took.Round(time.Millisecond))
		}
		t.Logf("lab vcsim stopped %s after SIGTERM: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(20 * time.Second):
		_ = proc.Process.Kill()
		<-exited
		t.Fatal("lab vcsim still running 20 s after SIGTERM")
	}
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// TestIntegrationRunPowerOffWorker is README's first command: the
// power-off-worker scenario on the embedded Cluster API lab, which faultline
// starts and stops itself.
func TestIntegrationRunPowerOffWorker(t *testing.T) {
	labtest.Require(t)
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := execute([]string{"run", "power-off-worker", "--artifacts", dir}, &out, &errOut)
	t.Logf("stdout:\n%s", out.String())
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, errOut.String())
	}
	for _, want := range []string{
		"scenario power-off-worker on lab (compressed time profile, release v1.13): PASS",
		"phase   node-not-ready", "phase   machine-unhealthy", "phase   replacement-running",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.Contains(errOut.String(), "lab: all Machines Running in") {
		t.Errorf("stderr lacks the lab start line:\n%s", errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res engine.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Profile != "compressed" || res.Verdict != engine.Pass {
		t.Errorf("result.json: profile %q verdict %q", res.Profile, res.Verdict)
	}
}

// buildFaultline builds this command into the test's folder, for tests
// that run it as a process of its own (to signal or kill it).
func buildFaultline(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "faultline")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestTroubleshootingQuotes: every message docs/troubleshooting.md quotes
// in bold is one faultline prints: each run of its words between
// placeholders is in a Go source file of the project.
func TestTroubleshootingQuotes(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sources strings.Builder
	err = filepath.WalkDir(filepath.Join("..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		sources.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	quotes := regexp.MustCompile(`(?s)\*\*"(.+?)"\*\*`).FindAllStringSubmatch(string(doc), -1)
	if len(quotes) < 5 {
		t.Fatalf("found %d quoted messages", len(quotes))
	}
	// What a message fills in: a name, a number, a path, a quote.
	placeholder := regexp.MustCompile(`\.\.\.|\b[A-Z]\b|FILE|LINE|COL|FIELD|URL|\$[A-Z_]+|[()"]`)
	for _, q := range quotes {
		for _, text := range placeholder.Split(strings.Join(strings.Fields(q[1]), " "), -1) {
			text = strings.Trim(text, " :")
			if len(text) < 8 {
				continue // between two placeholders
			}
			if !strings.Contains(sources.String(), text) {
				t.Errorf("docs/troubleshooting.md quotes %q, which no source file prints", text)
			}
		}
	}
}
