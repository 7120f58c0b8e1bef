package vcsim

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
)

// VMView reads every VM of vcsim through one container view, made at the
// first read, as the node simulator and the real nodes poll them.
type VMView struct {
	view *view.ContainerView
}

// read retrieves props of every VM in one call.
// Read reads props of every VM.
func (v *VMView) Read(ctx context.Context, vc *vim25.Client, props ...string) ([]mo.VirtualMachine, error) {
	if v.view == nil {
		cv, err := view.NewManager(vc).CreateContainerView(ctx, vc.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
		if err != nil {
			return nil, fmt.Errorf("create VM view: %w", err)
		}
		v.view = cv
	}
	var vms []mo.VirtualMachine
	if err := v.view.Retrieve(ctx, []string{"VirtualMachine"}, props, &vms); err != nil {
		return nil, fmt.Errorf("read VMs: %w", err)
	}
	return vms, nil
}

// close destroys the view, if there is one.
// Close destroys the view.
func (v *VMView) Close(ctx context.Context) {
	if v.view != nil {
		_ = v.view.Destroy(context.WithoutCancel(ctx))
	}
}
