package vsphere

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
)

// FaultError is an operation that vCenter refused with a vSphere fault.
type FaultError struct {
	// Fault is the fault's type name (InvalidPowerState, NoPermission).
	Fault   string
	Message string
	Err     error
}

func (e *FaultError) Error() string {
	if e.Message == "" {
		return "vSphere fault " + e.Fault
	}
	return fmt.Sprintf("vSphere fault %s: %s", e.Fault, e.Message)
}

func (e *FaultError) Unwrap() error { return e.Err }

// Is makes a missing managed object match providers.ErrNotFound, and an
// object in the wrong state (or busy with another task)
// providers.ErrInvalidState.
func (e *FaultError) Is(target error) bool {
	switch target {
	case providers.ErrNotFound:
		return e.Fault == "ManagedObjectNotFound"
	case providers.ErrInvalidState:
		return e.Fault == "InvalidPowerState" || e.Fault == "InvalidState" || e.Fault == "TaskInProgress"
	case providers.ErrNotAuthenticated:
		return e.Fault == "NotAuthenticated" || e.Fault == "InvalidLogin"
	}
	return false
}

// describe turns a vSphere fault into a FaultError naming it, and a missing
// object into providers.ErrNotFound; other errors pass through.
func describe(err error) error {
	if err == nil {
		return nil
	}
	var f types.BaseMethodFault
	msg, ok := fault.As(err, &f)
	if !ok || f == nil {
		return err
	}
	name := reflect.TypeOf(f).Elem().Name()
	if msg == "" {
		msg = err.Error()
	}
	return &FaultError{Fault: name, Message: msg, Err: err}
}

func isNotFound(err error) bool { return errors.Is(err, providers.ErrNotFound) }
