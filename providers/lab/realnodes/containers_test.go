package realnodes

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/kind"
)

// fakeDocker plays the docker CLI: containers have a status, commands are
// recorded.
type fakeDocker struct {
	mu     sync.Mutex
	calls  []string
	status map[string]string
}

func (f *fakeDocker) Run(_ context.Context, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(args, " "))
	switch args[0] {
	case "network":
		return nil, nil
	case "inspect":
		name := args[len(args)-1]
		st, ok := f.status[name]
		if !ok {
			return nil, &kind.DockerError{Args: args, Err: errors.New("exit status 1"), Stderr: "Error: No such object: " + name}
		}
		return []byte(st + "\n"), nil
	case "run":
		for i, a := range args {
			if a == "--name" {
				f.status[args[i+1]] = "running"
			}
		}
	case "start", "unpause", "restart":
		f.status[args[len(args)-1]] = "running"
	case "kill":
		f.status[args[len(args)-1]] = "exited"
	case "pause":
		f.status[args[len(args)-1]] = "paused"
	case "rm":
		name := args[len(args)-1]
		if _, ok := f.status[name]; !ok {
			return nil, &kind.DockerError{Args: args, Err: errors.New("exit status 1"), Stderr: "Error response from daemon: No such container: " + name}
		}
		delete(f.status, name)
	}
	return nil, nil
}

func (f *fakeDocker) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	var verbs []string
	for _, c := range out {
		if !strings.HasPrefix(c, "inspect") && !strings.HasPrefix(c, "network") {
			verbs = append(verbs, strings.SplitN(c, " ", 2)[0])
		}
	}
	return verbs
}

// A VM's power states drive its container: created at the first
// power-on, killed at a power-off, paused when suspended, restarted at a
// reset, removed when the VM is gone; the address stays the VM's.
func TestReconcileFollowsThePowerState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	docker := &fakeDocker{status: map[string]string{}}
	state := filepath.Join(t.TempDir(), "containers.json")
	d, err := New(ctx, Config{Lab: "fl-lab", Image: "node:v1", StateFile: state, Docker: docker, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	boot := time.Unix(1000, 0)
	steps := []struct {
		name  string
		vm    VM
		verbs string
	}{
		{"powered off, never on", VM{Name: "cp-0", Exists: true, Power: providers.PoweredOff}, ""},
		{"first power-on", VM{Name: "cp-0", Exists: true, Power: providers.PoweredOn, BootTime: boot}, "run"},
		{"still on", VM{Name: "cp-0", Exists: true, Power: providers.PoweredOn, BootTime: boot}, ""},
		{"power-off", VM{Name: "cp-0", Exists: true, Power: providers.PoweredOff}, "kill"},
		{"power-on", VM{Name: "cp-0", Exists: true, Power: providers.PoweredOn, BootTime: boot.Add(time.Minute)}, "start"},
		{"suspend", VM{Name: "cp-0", Exists: true, Power: providers.Suspended, BootTime: boot.Add(time.Minute)}, "pause"},
		{"resume", VM{Name: "cp-0", Exists: true, Power: providers.PoweredOn, BootTime: boot.Add(time.Minute)}, "unpause"},
		{"reset", VM{Name: "cp-0", Exists: true, Power: providers.PoweredOn, BootTime: boot.Add(2 * time.Minute)}, "restart"},
		{"suspend again", VM{Name: "cp-0", Exists: true, Power: providers.Suspended, BootTime: boot.Add(2 * time.Minute)}, "pause"},
		{"power-off while suspended", VM{Name: "cp-0", Exists: true, Power: providers.PoweredOff}, "unpause kill"},
		{"destroyed", VM{Name: "cp-0"}, "rm"},
		{"gone", VM{Name: "cp-0"}, ""},
	}
	var ip string
	for _, st := range steps {
		got, err := d.Reconcile(ctx, st.vm)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if verbs := strings.Join(docker.took(), " "); verbs != st.verbs {
			t.Fatalf("%s: docker %q, want %q", st.name, verbs, st.verbs)
		}
		switch {
		case st.name == "first power-on":
			ip = got
			if ip == "" {
				t.Fatal("no address at the first power-on")
			}
		case st.vm.Exists && ip != "" && got != ip:
			t.Fatalf("%s: address %s, want the VM's %s", st.name, got, ip)
		}
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state file after Close: %v", err)
	}
}

// A container is recorded before it is started, so Cleanup after a
// crash removes it, and the network, and leaves nothing recorded.
// With a reboot delay, a VM that powers on again starts its container
// only once the delay since its boot time has passed; a reset kills it
// and starts it the same way.
func TestReconcileRebootDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	docker := &fakeDocker{status: map[string]string{}}
	d, err := New(ctx, Config{Lab: "fl-lab", Image: "node:v1", StateFile: filepath.Join(t.TempDir(), "s.json"), Docker: docker, RebootDelay: time.Hour, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	old, now := time.Now().Add(-2*time.Hour), time.Now()
	for _, st := range []struct {
		name  string
		vm    VM
		verbs string
	}{
		{"first power-on", VM{Name: "w", Exists: true, Power: providers.PoweredOn, BootTime: old}, "run"},
		{"power-off", VM{Name: "w", Exists: true, Power: providers.PoweredOff}, "kill"},
		{"powered on, still booting", VM{Name: "w", Exists: true, Power: providers.PoweredOn, BootTime: now}, ""},
		{"booted", VM{Name: "w", Exists: true, Power: providers.PoweredOn, BootTime: old}, "start"},
		{"reset", VM{Name: "w", Exists: true, Power: providers.PoweredOn, BootTime: now}, "kill"},
		{"reset, still booting", VM{Name: "w", Exists: true, Power: providers.PoweredOn, BootTime: now}, ""},
	} {
		if _, err := d.Reconcile(ctx, st.vm); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if verbs := strings.Join(docker.took(), " "); verbs != st.verbs {
			t.Fatalf("%s: docker %q, want %q", st.name, verbs, st.verbs)
		}
	}
}

func TestCleanupAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	docker := &fakeDocker{status: map[string]string{}}
	state := filepath.Join(t.TempDir(), "containers.json")
	d, err := New(ctx, Config{Lab: "fl-lab", Image: "node:v1", StateFile: state, Docker: docker, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range []string{"cp-0", "md-0"} {
		if _, err := d.Reconcile(ctx, VM{Name: vm, Exists: true, Power: providers.PoweredOn}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Containers) != 2 || st.Containers["cp-0"].IP == st.Containers["md-0"].IP || st.Network != "fl-lab" {
		t.Fatalf("state: %+v", st)
	}
	// The process dies here; a later one cleans up from the file.
	docker.took()
	if err := Cleanup(ctx, docker, state); err != nil {
		t.Fatal(err)
	}
	if got := docker.calls; len(got) != 3 || got[0] != "rm --force --volumes fl-lab-cp-0" || got[2] != "network rm fl-lab" {
		t.Fatalf("cleanup ran %q", got)
	}
	if len(docker.status) != 0 {
		t.Fatalf("containers left: %v", docker.status)
	}
	if err := Cleanup(ctx, docker, state); err != nil {
		t.Fatalf("a second cleanup: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	err := Config{Lab: "a b"}.Validate()
	for _, want := range []string{`lab name "a b"`, "image is required", "state file is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %s", err, want)
		}
	}
}

// A destroyed VM's address is not given to the next VM at once (its
// neighbours and etcd peers still know it as the old one's): addresses
// go round the subnet.
func TestAddressesAreNotReusedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	docker := &fakeDocker{status: map[string]string{}}
	d, err := New(ctx, Config{Lab: "fl-lab", Image: "node:v1", StateFile: filepath.Join(t.TempDir(), "containers.json"), Docker: docker, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	on := func(name string) string {
		t.Helper()
		ip, err := d.Reconcile(ctx, VM{Name: name, Exists: true, Power: providers.PoweredOn, BootTime: time.Unix(1000, 0)})
		if err != nil {
			t.Fatal(err)
		}
		return ip
	}
	a, b := on("cp-a"), on("cp-b")
	if _, err := d.Reconcile(ctx, VM{Name: "cp-a"}); err != nil {
		t.Fatal(err)
	}
	if c := on("cp-c"); c == a || c == b {
		t.Errorf("cp-c got %s; cp-a had %s (destroyed), cp-b has %s", c, a, b)
	}
}
