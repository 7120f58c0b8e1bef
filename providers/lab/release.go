package lab

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/management"
)

// Release names the Cluster API and CAPV stack a lab runs
// (labconfig.Release); Stack is one (labconfig.Stack).
type (
	Release = labconfig.Release
	Stack   = labconfig.Stack
)

// Stacks are the stacks a lab can run, the default first.
func Stacks() []Stack { return labconfig.Stacks }

// ParseRelease reads a --release value (labconfig.ParseRelease).
func ParseRelease(s string) Release { return labconfig.ParseRelease(s) }

// BuildStack builds stack's managers unless they are (management.Build),
// writing its progress to progress, and returns their folder.
func BuildStack(ctx context.Context, stack Stack, progress io.Writer) (string, error) {
	return management.Build(ctx, stack, progress)
}

// StackBuilt tells whether stack's managers are built (management.Built).
func StackBuilt(stack Stack) (bool, error) { return management.Built(stack) }

// VerifyStack says how a built stack's files are not as they were built
// (management.Verify).
func VerifyStack(stack Stack) error { return management.Verify(stack) }

// StackDir is where stack's managers are built (management.StackDir).
func StackDir(stack Stack) (string, error) { return management.StackDir(stack) }

// Stack is the stack the lab's management plane runs.
func (l *Lab) Stack() Stack { return l.mgmt.Stack() }

// ManagerVersions are the versions the lab's managers report, by binary
// (management.Plane.ManagerVersions).
func (l *Lab) ManagerVersions() map[string]string { return l.mgmt.ManagerVersions() }

// UpgradeManagement implements providers.ManagementUpgrade: the lab's
// management plane moves to release in place (management.Plane.Upgrade),
// built first when it is not (minutes, once per machine).
func (p *Provider) UpgradeManagement(ctx context.Context, release string, progress func(string)) error {
	l := p.lab
	stack, err := labconfig.ParseRelease(release).Resolve()
	if err != nil {
		return fmt.Errorf("release %w", err)
	}
	if !stack.Compiled {
		if ok, err := management.Built(stack); err != nil {
			return err
		} else if !ok {
			progress(fmt.Sprintf("building %s's managers (once per machine)", stack))
			if _, err := management.Build(ctx, stack, io.Discard); err != nil {
				return err
			}
		}
	}
	return l.mgmt.Upgrade(ctx, l.managementInput(stack), progress)
}

// Lab is the lab p is the provider of.
func (p *Provider) Lab() *Lab { return p.lab }

// ManagementRelease implements providers.ManagementUpgrade.
func (p *Provider) ManagementRelease() string { return p.lab.Stack().Name }

// Upgrades are the stacks the lab's management plane ran before an
// upgrade, oldest first, with their managers' versions.
func (l *Lab) Upgrades() []management.Upgraded { return l.mgmt.Upgrades() }

// WriteClusterctlConfig writes a clusterctl configuration into the lab's
// folder whose local repository holds every release the lab serves and
// the one it runs (management.WriteClusterctlConfig), and returns its
// path: `clusterctl upgrade plan --config PATH` against the lab's
// management kubeconfig then works with no reach to GitHub.
func (l *Lab) WriteClusterctlConfig(ctx context.Context) (string, error) {
	return management.WriteClusterctlConfig(ctx, filepath.Join(l.dir, "clusterctl"), append(slices.Clone(Stacks()), l.Stack()))
}
