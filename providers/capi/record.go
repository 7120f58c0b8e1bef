package capi

import (
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// Name is the Cluster API provider's name, in journals and on the command
// line.
const Name = "capi"

// Record is what a journal keeps about the management cluster a fault
// went to: the kubeconfig and context it was reached with, the identity
// (Identity) they reached, and the vCenter behind its VMs. Ref writes it
// into a providers.ProviderRef, RecordOf reads it back.
type Record struct {
	Kubeconfig, Context string
	// Server and CASHA256 are the identity of the management cluster the
	// fault went to.
	Server, CASHA256 string
	// VCenter is the vCenter VM faults went to, or nil.
	VCenter *vsphere.Record
}

// The ProviderRef.Config keys of a Record (its vCenter's are
// vsphere.Record's).
const (
	refKubeconfig = "kubeconfig"
	refContext    = "context"
	refServer     = "server"
	refCASHA256   = "caSHA256"
)

// Ref is the record as a journal keeps it.
func (r Record) Ref() providers.ProviderRef {
	ref := providers.ProviderRef{Name: Name, Target: r.Server, Config: map[string]string{}}
	if r.VCenter != nil {
		r.VCenter.Into(ref.Config)
		if ref.Target == "" {
			ref.Target = r.VCenter.URL
		}
	}
	for k, v := range map[string]string{refKubeconfig: r.Kubeconfig, refContext: r.Context, refServer: r.Server, refCASHA256: r.CASHA256} {
		if v != "" {
			ref.Config[k] = v
		}
	}
	return ref
}

// RecordOf reads a management cluster's record back from a journal's
// ProviderRef.
func RecordOf(ref providers.ProviderRef) Record {
	r := Record{Kubeconfig: ref.Config[refKubeconfig], Context: ref.Config[refContext], Server: ref.Config[refServer], CASHA256: ref.Config[refCASHA256]}
	if vc, ok := vsphere.RecordOf(ref.Config); ok {
		r.VCenter = &vc
	}
	return r
}
