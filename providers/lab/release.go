package lab

import (
	"context"
	"io"

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

// StackDir is where stack's managers are built (management.StackDir).
func StackDir(stack Stack) (string, error) { return management.StackDir(stack) }

// Stack is the stack the lab's management plane runs.
func (l *Lab) Stack() Stack { return l.mgmt.Stack() }

// ManagerVersions are the versions the lab's managers report, by binary
// (management.Plane.ManagerVersions).
func (l *Lab) ManagerVersions() map[string]string { return l.mgmt.ManagerVersions() }
