// Package vcsim is the embedded lab's vCenter: govmomi's simulator served
// with TLS on 127.0.0.1 (Start), its settings for the vsphere provider and
// govc (Sim.Config), the guest IPs CAPV waits for (Sim.SetGuestIP), and
// the lab's certificate authority that makes the process trust it
// (TrustLabCertificates).
//
// It owns the simulator's lifecycle and certificates. It may import the
// vsphere provider (for its Config) and nothing else of faultline.
package vcsim
