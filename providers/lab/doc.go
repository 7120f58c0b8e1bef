// Package lab is the embedded lab: a Cluster API management cluster with
// a vCenter that runs inside the faultline process, so a scenario runs end
// to end with no vCenter and no cluster. It assembles its parts, each a
// package of its own, as kind's create runs its actions (Start, start.go):
//
//	labconfig    the shared leaf: a cluster's shape, the time profile
//	vcsim        govmomi's vCenter simulator on 127.0.0.1, with the lab's CA
//	management   kube-apiserver and etcd (envtest) with Cluster API's and
//	             CAPV's controllers and webhooks
//	nodesim      the node simulator, over the workload API servers of
//	workloadapi  the simulated clusters
//	realnodes    the real-node tier: kind node containers booted by kubeadm
//
// lab itself owns the assembly (Start, Stop, Renew, Prepare), each
// cluster's Cluster API objects, the lab's provider (capi's over the lab,
// plus node faults through the simulator or the containers), the records
// 'faultline lab down' reads, and the vCenter-only lab (StartVCenter).
//
// vcsim-only code lives here so that production providers never import
// the simulator. It imports the contract (providers), capi and vsphere
// (the lab is a Cluster API management cluster with a vCenter), kind's
// docker code, its parts and internal packages; it must not import the
// framework (the scenario language embeds the lab's shape, not the other
// way round), the front door (session), cmd or suites.
package lab
