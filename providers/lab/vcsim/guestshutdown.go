package vcsim

import (
	"context"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// guestType is the type of the objects that answer for a VM's guest.
const guestType = "FaultlineGuest"

// slowShutdown answers ShutdownGuest for a VM's guest (hostRules points
// the call at it): the call returns at once, as vCenter's does, and the
// guest powers off after the Sim's shutdown time, unless it was powered
// off, or off and on again, meanwhile.
type slowShutdown struct {
	self  types.ManagedObjectReference
	vm    *simulator.VirtualMachine
	after time.Duration
}

// Reference implements mo.Reference.
func (s *slowShutdown) Reference() types.ManagedObjectReference { return s.self }

// ShutdownGuest is the simulator method.
func (s *slowShutdown) ShutdownGuest(ctx *simulator.Context, req *types.ShutdownGuest) soap.HasFault {
	r := &methods.ShutdownGuestBody{}
	var st types.VirtualMachinePowerState
	var boot *time.Time
	ctx.WithLock(s.vm, func() { st, boot = s.vm.Runtime.PowerState, s.vm.Runtime.BootTime })
	if st != types.VirtualMachinePowerStatePoweredOn {
		r.Fault_ = simulator.Fault("", &types.InvalidPowerState{RequestedState: types.VirtualMachinePowerStatePoweredOn, ExistingState: st})
		return r
	}
	req.This = s.vm.Reference()
	// The request's context ends with the call; the guest goes on.
	base := &simulator.Context{Context: context.Background(), Map: ctx.Map, Session: ctx.Session}
	time.AfterFunc(s.after, func() {
		base.WithLock(s.vm, func() {
			now := s.vm.Runtime.BootTime
			same := now == nil && boot == nil || now != nil && boot != nil && now.Equal(*boot)
			if s.vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn && same {
				s.vm.ShutdownGuest(base, req)
			}
		})
	})
	r.Res = new(types.ShutdownGuestResponse)
	return r
}
