package realnodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/kind"
)

// Label marks every container and network of a lab, with the lab's name.
const Label = "faultline.dev/lab"

// Config is what a Driver needs.
type Config struct {
	// Lab names the lab: containers are LAB-VM, the network LAB.
	Lab string
	// Image is the node image (hack/kind-image.sh builds one offline) of
	// a VM whose Machine names no other Kubernetes version; ImageOf
	// finds the one of a version (kind.ImageOf), for a rollout's Machines.
	Image   string
	ImageOf func(ctx context.Context, version string) (string, error)
	// StateFile records the network and the containers as they are made.
	StateFile string
	Docker    kind.Docker
	// Quirks adapt the containers to the docker host (kind.DetectQuirks).
	Quirks kind.HostQuirks
	// RebootDelay is how long after its power-on (vCenter's boot time) a
	// VM that has run before starts its container again: the firmware and
	// guest OS boot that a container does not have (the time profile's
	// reboot). Zero starts it at once.
	RebootDelay time.Duration
	Log         logr.Logger
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Lab == "" || strings.ContainsAny(c.Lab, " /:") {
		errs = append(errs, fmt.Errorf("lab name %q: expected a docker name (letters, digits, '-', '_', '.')", c.Lab))
	}
	if c.Image == "" {
		errs = append(errs, errors.New("image is required: the kind node image (hack/kind-image.sh)"))
	}
	if c.StateFile == "" {
		errs = append(errs, errors.New("state file is required: what is made is recorded before it is made"))
	}
	return errors.Join(errs...)
}

// VM is what the lab read of one VM.
type VM struct {
	Name   string
	Exists bool
	Power  providers.PowerState
	// BootTime is vCenter's summary.runtime.bootTime: a new one while the
	// VM is on is a reset.
	BootTime time.Time
	// Version is its Machine's Kubernetes version, "" when unknown: its
	// container is made from that version's node image.
	Version string
}

// State is the state file: the network and every container the driver
// made, each with its address.
type State struct {
	Lab     string `json:"lab"`
	Network string `json:"network,omitempty"`
	Subnet  string `json:"subnet,omitempty"`
	// Containers are by VM name.
	Containers map[string]Container `json:"containers,omitempty"`
	// LoadBalancer is the control-plane endpoint's, when started.
	LoadBalancer *Container `json:"loadBalancer,omitempty"`
	// LastIP is the address last given to a container.
	LastIP string `json:"lastIP,omitempty"`
}

// Container is one VM's container.
type Container struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
}

// Driver keeps the containers in step with the VMs.
type Driver struct {
	cfg    Config
	mu     sync.Mutex
	state  State
	subnet netip.Prefix
	// boots are the VMs' boot times as last seen.
	boots map[string]time.Time
}

// New creates the lab's network, recorded first.
func New(ctx context.Context, cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("vm containers: %w", err)
	}
	if cfg.Docker == nil {
		cfg.Docker = kind.ExecDocker{}
	}
	d := &Driver{cfg: cfg, state: State{Lab: cfg.Lab, Network: cfg.Lab, Containers: map[string]Container{}}, boots: map[string]time.Time{}}
	if err := d.save(); err != nil {
		return nil, err
	}
	subnet, err := kind.CreateNetwork(ctx, cfg.Docker, cfg.Lab)
	if err != nil {
		return nil, fmt.Errorf("create the lab's docker network: %w", err)
	}
	d.subnet, d.state.Subnet = subnet, subnet.String()
	if err := d.save(); err != nil {
		return nil, err
	}
	return d, nil
}

// ContainerName is the name of vm's container.
func (d *Driver) ContainerName(vm string) string { return d.cfg.Lab + "-" + vm }

// VMs lists, sorted, the VMs that have a container.
func (d *Driver) VMs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.state.Containers))
	for vm := range d.state.Containers {
		out = append(out, vm)
	}
	sort.Strings(out)
	return out
}

// Subnet is the lab's docker network.
func (d *Driver) Subnet() netip.Prefix { return d.subnet }

// Reconcile brings vm's container to vm's state, and returns its address
// ("" when it has none: never powered on, or gone).
func (d *Driver) Reconcile(ctx context.Context, vm VM) (string, error) {
	d.mu.Lock()
	c, known := d.state.Containers[vm.Name]
	lastBoot := d.boots[vm.Name]
	d.boots[vm.Name] = vm.BootTime
	d.mu.Unlock()
	if !vm.Exists {
		if !known {
			return "", nil
		}
		return "", d.remove(ctx, vm.Name, c)
	}
	if !known {
		if vm.Power != providers.PoweredOn {
			return "", nil // created at its first power-on
		}
		c, err := d.create(ctx, vm)
		return c.IP, err
	}
	status, err := d.status(ctx, c.Name)
	if err != nil {
		return c.IP, err
	}
	booting := d.cfg.RebootDelay > 0 && time.Since(vm.BootTime) < d.cfg.RebootDelay
	switch vm.Power {
	case providers.PoweredOn:
		switch {
		case status == "paused":
			err = d.docker(ctx, "unpause", c.Name)
		case status != "running" && !booting:
			err = d.docker(ctx, "start", c.Name)
		case status != "running":
			// Still booting: started once RebootDelay has passed.
		case !lastBoot.IsZero() && !vm.BootTime.Equal(lastBoot) && d.cfg.RebootDelay == 0:
			// Powered off and on between two reads: a reset.
			err = d.docker(ctx, "restart", "--time", "0", c.Name)
		case !lastBoot.IsZero() && !vm.BootTime.Equal(lastBoot):
			// A reset: down now, up once the guest has booted again.
			err = d.docker(ctx, "kill", c.Name)
		}
	case providers.Suspended:
		if status == "running" {
			err = kind.Pause(ctx, d.cfg.Docker, c.Name)
		}
	case providers.PoweredOff:
		if status == "paused" {
			err = d.docker(ctx, "unpause", c.Name)
			status = "running"
		}
		if err == nil && status == "running" {
			err = d.docker(ctx, "kill", c.Name)
		}
	}
	return c.IP, err
}

// create records and starts vm's container at the next free address,
// from the node image of its Kubernetes version.
func (d *Driver) create(ctx context.Context, v VM) (Container, error) {
	image := d.cfg.Image
	if v.Version != "" && d.cfg.ImageOf != nil {
		var err error
		if image, err = d.cfg.ImageOf(ctx, v.Version); err != nil {
			return Container{}, fmt.Errorf("vm %s (Kubernetes %s): %w", v.Name, v.Version, err)
		}
	}
	vm := v.Name
	d.mu.Lock()
	ip, err := d.nextIP()
	c := Container{Name: d.ContainerName(vm), IP: ip.String()}
	if err == nil {
		d.state.Containers[vm] = c
		err = d.saveLocked()
	}
	d.mu.Unlock()
	if err != nil {
		return c, err
	}
	args := append([]string{"run", "--detach", "--tty", "--name", c.Name, "--hostname", vm,
		"--label", Label + "=" + d.cfg.Lab, "--net", d.cfg.Lab, "--ip", c.IP, "--restart=no"},
		kind.NodeRunFlags(d.cfg.Quirks)...)
	args = append(args, image)
	if err := d.docker(ctx, args...); err != nil {
		return c, err
	}
	d.cfg.Log.Info("vm container created", "vm", vm, "container", c.Name, "ip", c.IP, "image", image)
	return c, nil
}

// nextIP is the first address after the one last given that no container
// of the lab has, wrapping around past the subnet's end to the first after
// the gateway's; d.mu is held. A removed VM's address is not given again
// at once, as a DHCP server keeps a lease: its neighbours still have the
// old container's MAC for it, and a control plane's etcd peers its URL.
func (d *Driver) nextIP() (netip.Addr, error) {
	used := map[string]bool{lastHost(d.subnet).String(): true} // the load balancer's
	for _, c := range d.state.Containers {
		used[c.IP] = true
	}
	first := d.subnet.Addr().Next().Next() // .0 is the network, .1 the gateway
	start := first
	if last, err := netip.ParseAddr(d.state.LastIP); err == nil && d.subnet.Contains(last.Next()) {
		start = last.Next()
	}
	for a := start; ; {
		if !used[a.String()] {
			d.state.LastIP = a.String()
			return a, nil
		}
		if a = a.Next(); !d.subnet.Contains(a) {
			a = first
		}
		if a == start {
			return netip.Addr{}, fmt.Errorf("no free address left in the lab's network %s", d.subnet)
		}
	}
}

func (d *Driver) remove(ctx context.Context, vm string, c Container) error {
	if err := d.docker(ctx, "rm", "--force", "--volumes", c.Name); err != nil && !IsGone(err) {
		return err
	}
	d.cfg.Log.Info("vm container removed: its VM is gone", "vm", vm, "container", c.Name)
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.state.Containers, vm)
	delete(d.boots, vm)
	return d.saveLocked()
}

// status is the container's docker state: running, paused, exited...
func (d *Driver) status(ctx context.Context, name string) (string, error) {
	out, err := d.cfg.Docker.Run(ctx, "inspect", "--format", "{{.State.Status}}", name)
	if err != nil {
		return "", fmt.Errorf("inspect vm container %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func (d *Driver) docker(ctx context.Context, args ...string) error {
	_, err := d.cfg.Docker.Run(ctx, args...)
	return err
}

// Close removes every container and the network.
func (d *Driver) Close(ctx context.Context) error {
	return Cleanup(ctx, d.cfg.Docker, d.cfg.StateFile)
}

func (d *Driver) save() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.saveLocked()
}

func (d *Driver) saveLocked() error {
	b, err := json.MarshalIndent(d.state, "", "  ")
	if err != nil {
		return err
	}
	tmp := d.cfg.StateFile + ".tmp"
	if err := os.MkdirAll(filepath.Dir(d.cfg.StateFile), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("record vm containers: %w", err)
	}
	return os.Rename(tmp, d.cfg.StateFile)
}

// Cleanup removes every container and the network a state file records
// (a lab that ended, or one that crashed), then the file. What is already
// gone is not an error.
func Cleanup(ctx context.Context, docker kind.Docker, stateFile string) error {
	if docker == nil {
		docker = kind.ExecDocker{}
	}
	b, err := os.ReadFile(stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("vm containers state %s: %w", stateFile, err)
	}
	var errs []error
	names := make([]string, 0, len(st.Containers)+1)
	for _, c := range st.Containers {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	if st.LoadBalancer != nil {
		names = append(names, st.LoadBalancer.Name)
	}
	for _, n := range names {
		if _, err := docker.Run(ctx, "rm", "--force", "--volumes", n); err != nil && !IsGone(err) {
			errs = append(errs, err)
		}
	}
	if st.Network != "" {
		if _, err := docker.Run(ctx, "network", "rm", st.Network); err != nil && !isNoSuchNetwork(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, os.Remove(stateFile))
	}
	return errors.Join(errs...)
}

// IsGone tells whether err is docker's for a container that does not
// exist (its VM was destroyed).
func IsGone(err error) bool {
	var de *kind.DockerError
	return errors.As(err, &de) && strings.Contains(de.Stderr, "No such container")
}

func isNoSuchNetwork(err error) bool {
	var de *kind.DockerError
	return errors.As(err, &de) && (strings.Contains(de.Stderr, "No such network") || strings.Contains(de.Stderr, "not found"))
}
