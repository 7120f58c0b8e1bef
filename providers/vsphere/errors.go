package vsphere

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/vmware/govmomi/vim25/soap"
	"net"
	"net/url"
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

// busyWith is the task vCenter names when it refuses an operation because
// another task of the object runs (TaskInProgress).
func busyWith(err error) (types.ManagedObjectReference, bool) {
	var f *types.TaskInProgress
	if _, ok := fault.As(err, &f); !ok || f == nil || f.Task.Value == "" {
		return types.ManagedObjectReference{}, false
	}
	return f.Task, true
}

// ThumbprintError is a vCenter whose certificate is not the one pinned: a
// man in the middle, or a certificate renewed since (recover pins the one
// recorded when the fault was injected).
type ThumbprintError struct {
	Host, Presented, Want string
}

func (e *ThumbprintError) Error() string {
	return fmt.Sprintf("vCenter %s presented a certificate with thumbprint %s, not the thumbprint given (%s)", e.Host, e.Presented, e.Want)
}

// PresentedThumbprint is the SHA-256 thumbprint of the certificate the
// server at u presents, read from a TLS handshake that sends nothing else
// (no request, no credential): what recover shows when a pinned
// certificate changed.
func PresentedThumbprint(ctx context.Context, u *url.URL) (string, error) {
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} // #nosec G402 -- reads the certificate only
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "", fmt.Errorf("vCenter %s presented no certificate", u.Host)
	}
	return soap.ThumbprintSHA256(certs[0]), nil
}
