// Package realnodes is the embedded lab's real-node tier: the VMs of a
// cluster whose nodes are real are containers of the kind node image, one
// privileged container per vcsim VM on a docker network of the lab's own,
// whose lifecycle is the VM's (containers.go): powered on is running,
// powered off is killed (the plug pulled), suspended is paused, a reset is
// a restart, a VM gone from the inventory is a container removed, and each
// VM keeps one address for its whole life. Each container boots once from
// the bootstrap data CAPV put in its VM's extraConfig, with real kubeadm
// (boot.go, cloudconfig.go); an envoy load balancer sends the
// control-plane endpoint to the control planes that run
// (loadbalancer.go); the cluster gets its CNI agent (cni.go). Nodes runs
// all this for one cluster.
//
// Every container and the network are recorded in a state file before
// they are created, so Cleanup (Remove) clears what a crashed run left.
//
// It imports the kind provider's docker code, the contract, the lab's
// leaf (labconfig) and vcsim's VM view; it must not import the engine,
// the front door, cmd or suites.
package realnodes
