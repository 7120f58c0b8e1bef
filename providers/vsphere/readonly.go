package vsphere

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/vmware/govmomi/vim25/soap"
)

// ErrReadOnly is what a read-only session returns for a method that would
// change the inventory.
var ErrReadOnly = errors.New("refused: this vCenter session is read-only")

// WithReadOnly makes the session refuse every method that creates a task
// (power, destroy, reconfigure, clone: every change to a VM is one) and
// the guest operations that run or copy something in a guest, before the
// request leaves: a dry run must not change vCenter, whatever the code
// does by mistake.
func WithReadOnly() Option { return func(p *Provider) { p.readOnly = true } }

// readOnlyTransport passes the reading methods through.
type readOnlyTransport struct{ next soap.RoundTripper }

// guestWrites are the guest operations that change a guest without a task.
var guestWrites = map[string]bool{
	"StartProgramInGuest": true, "InitiateFileTransferToGuest": true, "DeleteFileInGuest": true,
	"MakeDirectoryInGuest": true, "MoveFileInGuest": true, "TerminateProcessInGuest": true,
}

func (t readOnlyTransport) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	method := strings.TrimSuffix(reflect.Indirect(reflect.ValueOf(req)).Type().Name(), "Body")
	if strings.HasSuffix(method, "_Task") || guestWrites[method] {
		return fmt.Errorf("%s: %w", method, ErrReadOnly)
	}
	return t.next.RoundTrip(ctx, req, res)
}
