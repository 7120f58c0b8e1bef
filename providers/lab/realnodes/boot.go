package realnodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Boot runs a VM's cloud-config in its container as cloud-init's stages
// would at first boot: once the container's systemd has finished booting,
// write_files, then bootcmd, then runcmd. A failing command does not stop
// the ones after it (cloud-init runs runcmd as a script without -e;
// CABPK chains what must not run after a failure with &&); the error
// joins every failure, with what the command printed. What the commands
// print is also appended to /var/log/cloud-init-output.log in the node,
// where cloud-init keeps it on a real VM: a join that hangs can be read
// there while it runs.
func (d *Driver) Boot(ctx context.Context, vm string, cc *CloudConfig) error {
	d.mu.Lock()
	c, ok := d.state.Containers[vm]
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("vm %s has no container: it was never powered on", vm)
	}
	if err := d.waitBooted(ctx, c.Name); err != nil {
		return err
	}
	for _, f := range cc.WriteFiles {
		if err := d.writeFile(ctx, c.Name, f); err != nil {
			return err
		}
	}
	var errs []error
	for _, cmd := range append(append([]Command(nil), cc.BootCmd...), cc.RunCmd...) {
		if len(cmd) == 0 {
			continue
		}
		out, err := d.cfg.Docker.Run(ctx, append([]string{"exec", c.Name, "/bin/bash", "-c", teeOutput, "bash"}, cmd...)...)
		d.cfg.Log.V(1).Info("cloud-init command", "vm", vm, "command", strings.Join(cmd, " "), "output", string(out), "error", fmt.Sprint(err))
		if err != nil {
			errs = append(errs, fmt.Errorf("vm %s: %s: %w", vm, strings.Join(cmd, " "), err))
		}
	}
	return errors.Join(errs...)
}

// teeOutput runs its arguments with their output appended to cloud-init's
// output log as well, keeping their exit status.
const teeOutput = `set -o pipefail; "$@" 2>&1 | tee -a /var/log/cloud-init-output.log`

// waitBooted waits until the container's systemd has finished starting
// its units ("running", or "degraded" with a unit failed).
func (d *Driver) waitBooted(ctx context.Context, name string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		// is-system-running exits non-zero until the boot is over.
		out, _ := d.cfg.Docker.Run(ctx, "exec", name, "systemctl", "is-system-running")
		last = strings.TrimSpace(string(out))
		return last == "running" || last == "degraded", nil
	})
	if err != nil {
		return fmt.Errorf("container %s: systemd did not finish booting (last state %q): %w", name, last, err)
	}
	return nil
}

// writeFile writes one write_files entry: copied in through a temporary
// file, then given its permissions and owner.
func (d *Driver) writeFile(ctx context.Context, container string, f WriteFile) error {
	if !path.IsAbs(f.Path) {
		return fmt.Errorf("write_files %q: expected an absolute path", f.Path)
	}
	b, err := f.Bytes()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp("", "faultline-write-file-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// docker cp writes to the container's own filesystem, not to the tmpfs
	// on /tmp and /run: the file is staged at its root.
	staged := "/" + filepath.Base(tmp.Name())
	steps := [][]string{
		{"exec", container, "mkdir", "-p", path.Dir(f.Path)},
		{"cp", tmp.Name(), container + ":" + staged},
	}
	if f.Append {
		steps = append(steps, []string{"exec", container, "/bin/sh", "-c", `cat "$1" >> "$2" && rm -f "$1"`, "sh", staged, f.Path})
	} else {
		steps = append(steps, []string{"exec", container, "mv", "-f", staged, f.Path})
	}
	perm := f.Permissions
	if perm == "" {
		perm = "0644"
	}
	steps = append(steps, []string{"exec", container, "chmod", perm, f.Path})
	if f.Owner != "" {
		steps = append(steps, []string{"exec", container, "chown", f.Owner, f.Path})
	}
	for _, s := range steps {
		if _, err := d.cfg.Docker.Run(ctx, s...); err != nil {
			return fmt.Errorf("write_files %s: %w", f.Path, err)
		}
	}
	return nil
}
