package vsphere

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/vmware/govmomi/vim25/soap"
)

// reloginTransport logs in again when vCenter says the session is gone
// (its idle expiry, an administrator's TerminateSession) and repeats the
// call once, so that a run and its undo outlive a session. The keep-alive
// beneath it keeps an idle session from expiring in the first place.
type reloginTransport struct {
	next  soap.RoundTripper
	login func(ctx context.Context) error
	// mu makes concurrent calls that find the session gone log in once.
	mu sync.Mutex
}

// sessionMethods are the calls that make or end a session, never
// repeated after a login.
var sessionMethods = map[string]bool{"Login": true, "LoginByToken": true, "LoginExtensionByCertificate": true, "Logout": true, "SessionIsActive": true}

func (t *reloginTransport) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	err := t.next.RoundTrip(ctx, req, res)
	method := strings.TrimSuffix(reflect.Indirect(reflect.ValueOf(req)).Type().Name(), "Body")
	if !isFault(describe(err), "NotAuthenticated") || sessionMethods[method] {
		return err
	}
	t.mu.Lock()
	lerr := t.login(ctx)
	t.mu.Unlock()
	if lerr != nil {
		return fmt.Errorf("%s: the vCenter session was lost and logging in again failed: %w", method, errors.Join(describe(err), describe(lerr)))
	}
	// A fresh response: the first one holds the fault.
	fresh := reflect.New(reflect.TypeOf(res).Elem()).Interface().(soap.HasFault)
	if err := t.next.RoundTrip(ctx, req, fresh); err != nil {
		return err
	}
	reflect.ValueOf(res).Elem().Set(reflect.ValueOf(fresh).Elem())
	return nil
}
