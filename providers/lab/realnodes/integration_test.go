package realnodes_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab/realnodes"
)

// A vcsim VM's power operations, sent through the vSphere API, drive a
// real privileged container of the kind node image: its status, its
// address and its restarts, until the VM is destroyed and the lab closes.
func TestIntegrationVMContainers(t *testing.T) {
	image, quirks := requireNodeImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	docker := kind.ExecDocker{}
	simulator.Test(func(_ context.Context, c *vim25.Client) {
		d, vm, lab := newDriver(ctx, t, c, "fl-vmc", image, quirks)
		name := d.ContainerName(vm.Name())
		reconcile := func(step string) string {
			t.Helper()
			ip, err := d.Reconcile(ctx, read(ctx, t, vm))
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			return ip
		}
		// vcsim's VMs start powered on: the first reading creates the
		// container.
		ip := reconcile("first reading")
		if got := inspect(ctx, t, name, "{{.State.Status}} {{(index .NetworkSettings.Networks \""+lab+"\").IPAddress}}"); got != "running "+ip {
			t.Fatalf("container after power-on: %q, want running %s", got, ip)
		}
		if !d.Subnet().Contains(mustAddr(t, ip)) {
			t.Fatalf("address %s outside the lab's network %s", ip, d.Subnet())
		}
		started := inspect(ctx, t, name, "{{.State.StartedAt}}")

		for _, st := range []struct {
			op   func(context.Context) (*object.Task, error)
			want string
		}{
			{vm.PowerOff, "exited"},
			{vm.PowerOn, "running"},
			{vm.Suspend, "paused"},
			{vm.PowerOn, "running"},
		} {
			task(ctx, t, st.op)
			if got := reconcile(st.want); got != ip {
				t.Fatalf("%s: address %s, want the VM's %s", st.want, got, ip)
			}
			if got := inspect(ctx, t, name, "{{.State.Status}}"); got != st.want {
				t.Fatalf("container %q, want %s", got, st.want)
			}
		}
		if again := inspect(ctx, t, name, "{{.State.StartedAt}}"); again == started {
			t.Fatal("power-off and on did not restart the container")
		}
		started = inspect(ctx, t, name, "{{.State.StartedAt}}")
		// A reset is seen by the VM's new boot time.
		task(ctx, t, vm.Reset)
		before := read(ctx, t, vm)
		if before.BootTime.IsZero() {
			t.Fatal("vcsim reported no boot time")
		}
		reconcile("reset")
		if again := inspect(ctx, t, name, "{{.State.StartedAt}}"); again == started {
			t.Fatal("a reset did not restart the container")
		}

		task(ctx, t, vm.PowerOff)
		task(ctx, t, vm.Destroy)
		if ip := reconcile("destroyed"); ip != "" {
			t.Fatalf("a destroyed VM has address %s", ip)
		}
		if out, err := docker.Run(ctx, "ps", "--all", "--quiet", "--filter", "name=^"+name+"$"); err != nil || strings.TrimSpace(string(out)) != "" {
			t.Fatalf("container of a destroyed VM: %q, %v", out, err)
		}
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := docker.Run(ctx, "network", "inspect", lab); err == nil {
			t.Fatalf("network %s left after Close", lab)
		}
	})
}

// requireNodeImage skips the test, saying why, without a Docker engine or
// the kind node image (FAULTLINE_REQUIRE_KIND makes that a failure), and
// returns the image and the host's quirks.
func requireNodeImage(t *testing.T) (string, kind.HostQuirks) {
	t.Helper()
	if testing.Short() {
		t.Skip("vm containers integration test: skipped under -short")
	}
	fail := t.Skip
	if os.Getenv("FAULTLINE_REQUIRE_KIND") != "" {
		fail = t.Fatal
	}
	ctx := context.Background()
	docker := kind.ExecDocker{}
	if err := kind.Available(ctx, docker); err != nil {
		fail("vm containers integration test: " + err.Error())
	}
	image, err := kind.NewestImage(ctx, docker)
	if err != nil {
		fail("vm containers integration test: " + err.Error())
	}
	quirks, err := kind.DetectQuirks(ctx, docker, image)
	if err != nil {
		t.Fatal(err)
	}
	return image, quirks
}

// newDriver starts a Driver on a lab network named after prefix, removed
// when the test ends, and finds vcsim's first VM; it returns the lab's
// name too.
func newDriver(ctx context.Context, t *testing.T, c *vim25.Client, prefix, image string, quirks kind.HostQuirks) (*realnodes.Driver, *object.VirtualMachine, string) {
	t.Helper()
	lab := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%100000)
	state := filepath.Join(t.TempDir(), "containers.json")
	log := funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
	d, err := realnodes.New(ctx, realnodes.Config{Lab: lab, Image: image, StateFile: state, Docker: kind.ExecDocker{}, Quirks: quirks, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := realnodes.Cleanup(context.Background(), kind.ExecDocker{}, state); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	vm, err := find.NewFinder(c).VirtualMachine(ctx, "DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	return d, vm, lab
}

func read(ctx context.Context, t *testing.T, vm *object.VirtualMachine) realnodes.VM {
	t.Helper()
	var m mo.VirtualMachine
	err := vm.Properties(ctx, vm.Reference(), []string{"runtime.powerState", "summary.runtime.bootTime"}, &m)
	if err != nil {
		if strings.Contains(err.Error(), "has already been deleted") || strings.Contains(err.Error(), "ManagedObjectNotFound") {
			return realnodes.VM{Name: vm.Name()}
		}
		t.Fatal(err)
	}
	out := realnodes.VM{Name: vm.Name(), Exists: true, Power: providers.PowerState(m.Runtime.PowerState)}
	if bt := m.Summary.Runtime.BootTime; bt != nil {
		out.BootTime = *bt
	}
	return out
}

func task(ctx context.Context, t *testing.T, op func(context.Context) (*object.Task, error)) {
	t.Helper()
	tk, err := op(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func inspect(ctx context.Context, t *testing.T, name, format string) string {
	t.Helper()
	out, err := kind.ExecDocker{}.Run(ctx, "inspect", "--format", format, name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
