package vcsim_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers/lab/vcsim"
)

// TestGuestIPAsGovcSeesIt: a VM whose guest got its address shows it, with
// VMware Tools running, where govc vm.info reads them (the VM's summary)
// over SOAP, not only in guest.net where CAPV reads it.
func TestGuestIPAsGovcSeesIt(t *testing.T) {
	sim, err := vcsim.Start(vcsim.Input{})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ctx := context.Background()
	u := sim.URL()
	u.User = url.UserPassword(vcsim.Username, vcsim.Password())
	sc := soap.NewClient(u, false)
	if err := sc.SetRootCAs(sim.Config().CAFile); err != nil {
		t.Fatal(err)
	}
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	c := &govmomi.Client{Client: vc, SessionManager: session.NewManager(vc)}
	if err := c.Login(ctx, u.User); err != nil {
		t.Fatal(err)
	}
	f := find.NewFinder(c.Client)
	dc, err := f.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	vm, err := f.SetDatacenter(dc).VirtualMachine(ctx, "DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.SetGuestIP(vm.Reference(), "192.0.2.4"); err != nil {
		t.Fatal(err)
	}
	var m mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"summary.guest", "guest.net"}, &m); err != nil {
		t.Fatal(err)
	}
	g := m.Summary.Guest
	if g == nil || g.IpAddress != "192.0.2.4" || g.ToolsRunningStatus != string(types.VirtualMachineToolsRunningStatusGuestToolsRunning) {
		t.Errorf("summary.guest %+v: want IP 192.0.2.4 and Tools running", g)
	}
	if len(m.Guest.Net) == 0 || m.Guest.Net[0].IpAddress[0] != "192.0.2.4" {
		t.Errorf("guest.net %+v", m.Guest.Net)
	}
}
