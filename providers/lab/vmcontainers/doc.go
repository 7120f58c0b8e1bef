// Package vmcontainers backs vcsim VMs with real nodes: one privileged
// container of the kind node image per VM, on a docker network of the
// lab's own, whose lifecycle is the VM's. Powered on is running, powered
// off is killed (the plug pulled: the kubelet and the static pods die with
// it), suspended is paused, a reset (a new boot time while on) is a
// restart, and a VM gone from the inventory is a container removed. Each
// VM keeps one address for its whole life, so a control plane that comes
// back keeps its etcd and API server address.
//
// Every container and the network are recorded in a state file before
// they are created, so Cleanup removes what a crashed run left.
//
// It is the first part of the lab's real-node tier (issue "Real nodes
// under real Cluster API"): booting the containers from CAPV's bootstrap
// data is not here yet.
//
// It imports the kind provider's docker code and the contract; it must not
// import the engine, session, cmd or suites.
package vmcontainers
