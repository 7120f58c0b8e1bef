// Package nodesim is the embedded lab's node simulator: for each cluster
// whose nodes it plays (AddCluster), it runs, from its VMs' state in vcsim,
// what kubeadm, the kubelets, etcd and the CNI would do on real nodes: a
// VM powered on boots and registers its Node after the profile's boot
// time, posts Node status every heartbeat, runs a control plane's static
// pods and etcd member (workloadapi's API servers and members), elects
// etcd leaders, plays Calico's IPAM and the CNI agent's admission, and
// serves the policy webhooks scenarios install. Faults reach it through
// its setters (SetKubelet, SetStaticPod, SetCNI, SetLeaderStuck).
//
// It owns the simulated nodes. It imports the lab's leaf (labconfig),
// the workload API servers (workloadapi) and vcsim's VM view, and nothing
// above them.
package nodesim
