// Package capi is the Cluster API provider: it reaches a management cluster
// through a kubeconfig, the workload clusters it manages through their
// kubeconfig Secrets, and, for VM and guest faults, the vCenter behind
// CAPV. Targets resolve to Machines; a Machine's VM is found from its
// providerID, its Node from its nodeRef. WithReadOnly makes every client
// refuse writes, for `faultline check`.
//
// It imports the contract (providers), vsphere (the VMs behind Machines)
// and internal packages; it must not import framework, session, cmd or
// suites.
package capi
