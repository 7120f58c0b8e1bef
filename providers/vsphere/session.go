package vsphere

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// reloginTransport logs in again when vCenter says the session is gone
// (its idle expiry, an administrator's TerminateSession), by a fault or,
// for a property read, by properties missing for it, and repeats the
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
	if !isFault(describe(err), "NotAuthenticated") && !readNotAuthenticated(res) || sessionMethods[method] {
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

// readNotAuthenticated tells whether res is a property read that vCenter
// answered without the session: it answers such a read with no fault but
// with every property missing, each for NotAuthenticated.
func readNotAuthenticated(res soap.HasFault) bool {
	var objs []types.ObjectContent
	switch r := res.(type) {
	case *methods.RetrievePropertiesExBody:
		if r.Res != nil && r.Res.Returnval != nil {
			objs = r.Res.Returnval.Objects
		}
	case *methods.RetrievePropertiesBody:
		if r.Res != nil {
			objs = r.Res.Returnval
		}
	}
	for _, o := range objs {
		for _, m := range o.MissingSet {
			if _, ok := m.Fault.Fault.(*types.NotAuthenticated); ok {
				return true
			}
		}
	}
	return false
}
