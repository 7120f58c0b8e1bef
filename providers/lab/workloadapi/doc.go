// Package workloadapi serves the embedded lab's simulated workload
// clusters: each cluster's in-memory store (Cluster API's inmemory
// runtime) behind a TLS endpoint on 127.0.0.1 with its own certificates
// (Server), the kube-apiserver and etcd members the node simulator adds
// and removes (a stopped API server closes the port, a lost quorum
// answers "no leader"), the resources the inmemory API does not serve
// (extra.go, watch.go), and Kubernetes' own admission webhooks run on
// dry-run creates and on the pods the simulator creates (Admitter).
//
// It owns the workload API servers. It imports the lab's leaf
// (labconfig) and nothing else of faultline; the node simulator drives it.
package workloadapi
