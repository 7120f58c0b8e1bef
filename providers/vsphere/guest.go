package vsphere

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vmware/govmomi/guest/toolbox"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/faultline-dev/faultline/internal/nodecmd"
	"github.com/faultline-dev/faultline/providers"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// Environment variables read by GuestAuthFromEnv: the guest OS login that
// VMware Tools guest operations run node faults with.
const (
	EnvGuestUsername     = "FAULTLINE_GUEST_USERNAME"
	EnvGuestPassword     = "FAULTLINE_GUEST_PASSWORD"
	EnvGuestPasswordFile = "FAULTLINE_GUEST_PASSWORD_FILE"
)

// GuestAuth is a guest OS login. The user is root or may run sudo without
// a password (CAPV's node images give their user that).
type GuestAuth struct {
	Username string
	Password string
}

// GuestAuthFromEnv reads the guest login: the username and either the
// password or a file holding it. None set is nil, no error; half of it is
// an error that names what is missing.
func GuestAuthFromEnv(getenv func(string) string) (*GuestAuth, error) {
	user, pass, file := getenv(EnvGuestUsername), getenv(EnvGuestPassword), getenv(EnvGuestPasswordFile)
	if user == "" && pass == "" && file == "" {
		return nil, nil
	}
	return NewGuestAuth(user, pass, file)
}

// NewGuestAuth checks a guest login given as a username and either a
// password or a file that holds it (its first line).
func NewGuestAuth(user, pass, file string) (*GuestAuth, error) {
	switch {
	case user == "":
		return nil, fmt.Errorf("guest login: no username: set %s or --guest-username", EnvGuestUsername)
	case pass != "" && file != "":
		return nil, fmt.Errorf("guest login: both a password and a password file (%s); give one", file)
	case file != "":
		b, err := regularfile.Read(file, regularfile.Small)
		if err != nil {
			return nil, fmt.Errorf("guest password file: %w", err)
		}
		pass, _, _ = strings.Cut(string(b), "\n")
		pass = strings.TrimSuffix(pass, "\r")
		if pass == "" {
			return nil, fmt.Errorf("guest password file %s: its first line is empty", file)
		}
	case pass == "":
		return nil, fmt.Errorf("guest login for %q: no password: set %s or %s (--guest-password-file)", user, EnvGuestPassword, EnvGuestPasswordFile)
	}
	return &GuestAuth{Username: user, Password: pass}, nil
}

// WithGuestAuth lets node faults (stop the kubelet, move a static pod's
// manifest) run in the VMs' guests through VMware Tools.
func WithGuestAuth(a *GuestAuth) Option { return func(p *Provider) { p.guest = a } }

// guestCommandTimeout bounds one guest command: the commands are quick,
// but VMware Tools may be slow to start one on a loaded host.
const guestCommandTimeout = 2 * time.Minute

// GuestOperations reports why node faults cannot run in this vCenter's
// guests, or nil when they can.
func (p *Provider) GuestOperations() error {
	if p.guest == nil {
		return fmt.Errorf("node faults on vSphere VMs run through VMware Tools guest operations and need a guest login: set %s and %s (or %s): %w",
			EnvGuestUsername, EnvGuestPassword, EnvGuestPasswordFile, providers.ErrUnsupported)
	}
	return nil
}

// CapabilityUnavailable implements providers.CapabilityCondition: node
// faults need a guest login.
func (p *Provider) CapabilityUnavailable(c providers.Capability) error {
	switch c {
	case providers.CapNodeKubelet, providers.CapNodeStaticPods:
		return p.GuestOperations()
	}
	return nil
}

// RunInGuest runs argv in the VM's guest through VMware Tools guest
// operations, as root (through sudo -n when the login is not root), waits
// for it to end and returns its output. A non-zero exit is an error that
// holds the output.
func (p *Provider) RunInGuest(ctx context.Context, obj providers.Object, argv []string) ([]byte, error) {
	if err := p.GuestOperations(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, guestCommandTimeout)
	defer cancel()
	auth := &types.NamePasswordAuthentication{Username: p.guest.Username, Password: p.guest.Password}
	tc, err := toolbox.NewClient(ctx, p.client, p.vm(obj).Reference(), auth)
	if err != nil {
		return nil, fmt.Errorf("guest operations on vm %q: %w", obj.Name, describe(err))
	}
	// The output goes to a file in the guest, written by the guest's
	// shell, and is read back after: VMware Tools returns only the exit
	// code.
	out, err := tc.FileManager.CreateTemporaryFile(ctx, auth, "faultline-", ".out", "")
	if err != nil {
		return nil, fmt.Errorf("guest operations on vm %q: create a temporary file: %w", obj.Name, describe(err))
	}
	defer func() {
		// Clean-up outlives a cancelled run; the file is small and
		// harmless if this fails too.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := tc.FileManager.DeleteFile(cctx, auth, out); err != nil {
			p.log.V(1).Info("delete guest output file", "vm", obj.Name, "file", out, "error", err.Error())
		}
	}()
	cmd := nodecmd.Quote(argv)
	script := fmt.Sprintf(`{ if [ "$(id -u)" = 0 ]; then %s; else sudo -n %s; fi; } >%s 2>&1`, cmd, cmd, nodecmd.Quote([]string{out}))
	spec := &types.GuestProgramSpec{ProgramPath: "/bin/sh", Arguments: "-c " + nodecmd.Quote([]string{script})}
	pid, err := tc.ProcessManager.StartProgram(ctx, auth, spec)
	if err != nil {
		return nil, fmt.Errorf("run %s in the guest of vm %q: %w", cmd, obj.Name, describe(err))
	}
	var exit int32
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		procs, err := tc.ProcessManager.ListProcesses(ctx, auth, []int64{pid})
		if err != nil {
			return false, describe(err)
		}
		if len(procs) != 1 {
			return false, fmt.Errorf("guest process %d is gone from the guest's list", pid)
		}
		exit = procs[0].ExitCode
		return procs[0].EndTime != nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("run %s in the guest of vm %q: wait for it to end: %w", cmd, obj.Name, err)
	}
	output, err := p.readGuestFile(ctx, tc, out)
	if err != nil {
		return nil, fmt.Errorf("run %s in the guest of vm %q (exit %d): read its output: %w", cmd, obj.Name, exit, err)
	}
	if exit != 0 {
		return output, fmt.Errorf("run %s in the guest of vm %q: exit %d: %s", cmd, obj.Name, exit, strings.TrimSpace(string(output)))
	}
	return output, nil
}

func (p *Provider) readGuestFile(ctx context.Context, tc *toolbox.Client, path string) ([]byte, error) {
	r, _, err := tc.Download(ctx, path)
	if err != nil {
		return nil, describe(err)
	}
	var b bytes.Buffer
	_, err = io.Copy(&b, r)
	return b.Bytes(), errors.Join(err, r.Close())
}

// SetKubelet implements providers.NodeKubelet in the VM's guest.
func (p *Provider) SetKubelet(ctx context.Context, obj providers.Object, running bool) error {
	_, err := p.RunInGuest(ctx, obj, nodecmd.Kubelet(running))
	return err
}

// SetStaticPod implements providers.NodeStaticPods in the VM's guest: the
// component's manifest is moved out of /etc/kubernetes/manifests and back.
func (p *Provider) SetStaticPod(ctx context.Context, obj providers.Object, component string, running bool) error {
	_, err := p.RunInGuest(ctx, obj, nodecmd.StaticPod(component, running))
	return err
}

// StaticPodRunning implements providers.NodeStaticPods: a process of the
// component's name runs in the VM's guest.
func (p *Provider) StaticPodRunning(ctx context.Context, obj providers.Object, component string) (bool, error) {
	out, err := p.RunInGuest(ctx, obj, nodecmd.ProcessNames)
	if err != nil {
		return false, err
	}
	return nodecmd.Running(out, component), nil
}
