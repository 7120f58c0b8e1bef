package vcsim_test

import (
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// TestIntegrationTaskInProgress: with a VM task time, a power-off's task
// is still running when a power-on of the same VM comes, which vCenter
// refuses with TaskInProgress naming the running task (vcsim alone would
// run both at once); once the first has ended, the power-on runs. A
// simulator with another task time is refused while this one runs:
// govmomi's task delays are process-wide.
func TestIntegrationTaskInProgress(t *testing.T) {
	_, p := startWith(t, vcsim.Input{VMTaskTime: 2 * time.Second})
	if _, err := vcsim.Start(vcsim.Input{}); err == nil {
		t.Error("a simulator with no task time started beside one with 2s")
	}
	ctx := t.Context()
	obj := resolve(t, p, "DC0_H0_VM0")
	vm := object.NewVirtualMachine(p.Client(), types.ManagedObjectReference{Type: "VirtualMachine", Value: obj.ID})
	began := time.Now()
	off, err := vm.PowerOff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = vm.PowerOn(ctx)
	if err == nil {
		t.Fatal("a power-on while the VM's power-off ran was taken")
	}
	if f, ok := asTaskInProgress(err); !ok || f.Task != off.Reference() {
		t.Fatalf("power-on while the power-off runs: %v (%T); want TaskInProgress naming %s", err, err, off.Reference().Value)
	}
	if err := vsphere.WaitTask(ctx, off); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 2*time.Second {
		t.Errorf("the power-off's task took %s; want its task time, 2s", took)
	}
	// faultline's own power-off, sent while CAPV's power-on runs, waits
	// for it and then runs.
	on, err := vm.PowerOn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PowerOff(ctx, obj); err != nil {
		t.Fatalf("faultline's power-off while a power-on ran: %v; want it to wait for that task, then power off", err)
	}
	if err := vsphere.WaitTask(ctx, on); err != nil {
		t.Errorf("the power-on: %v", err)
	}
	if st, err := p.PowerState(ctx, obj); err != nil || st != providers.PoweredOff {
		t.Errorf("after both: %s, %v; want poweredOff", st, err)
	}
}

// asTaskInProgress reads a SOAP fault as vCenter's TaskInProgress.
func asTaskInProgress(err error) (types.TaskInProgress, bool) {
	if !soap.IsSoapFault(err) {
		return types.TaskInProgress{}, false
	}
	f, ok := soap.ToSoapFault(err).VimFault().(types.TaskInProgress)
	return f, ok
}
