package lab

import (
	"context"
	"fmt"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// VCSim is the lab's vCenter simulator (vcsim.Sim); StartVCSim starts one
// on its own, as 'faultline lab vcsim' and tests do.
type (
	VCSim      = vcsim.Sim
	VCSimInput = vcsim.Input
)

// StartVCSim starts a vCenter simulator on loopback (vcsim.Start).
func StartVCSim(in VCSimInput) (*VCSim, error) { return vcsim.Start(in) }

// TrustLabCertificates makes this process trust the vCenter simulators it
// starts from now on (vcsim.TrustLabCertificates): main or a suite calls
// it once, before the first lab.
func TrustLabCertificates() (cleanup func() error, err error) { return vcsim.TrustLabCertificates() }

// VCenterLab is the vCenter-only lab: a simulator and a vsphere provider
// connected to it, named "lab" in results. Scenarios that need no Cluster
// API (vm-power-cycle) run on it.
type VCenterLab struct {
	*vsphere.Provider
	sim *VCSim
}

// StartVCenter starts the vCenter-only lab.
func StartVCenter(ctx context.Context, opts ...vsphere.Option) (*VCenterLab, error) {
	sim, err := StartVCSim(VCSimInput{})
	if err != nil {
		return nil, err
	}
	p, err := vsphere.New(ctx, sim.Config(), append([]vsphere.Option{vsphere.WithName(Name)}, opts...)...)
	if err != nil {
		sim.Close()
		return nil, fmt.Errorf("connect to the embedded vcsim: %w", err)
	}
	return &VCenterLab{Provider: p, sim: sim}, nil
}

// Sim is the simulator.
func (l *VCenterLab) Sim() *VCSim { return l.sim }

// Close logs out and stops the simulator.
func (l *VCenterLab) Close(ctx context.Context) error {
	err := l.Provider.Close(ctx)
	l.sim.Close()
	return err
}

// Ref marks journals of the embedded lab: its simulator ends with the
// process, so a crashed lab run leaves nothing to undo.
func (l *VCenterLab) Ref() providers.ProviderRef { return providers.ProviderRef{Name: Name} }
