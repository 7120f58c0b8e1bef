// Package management is the embedded lab's management plane: a real
// kube-apiserver and etcd (envtest, started through shims that die with
// their parent: RunShim), Cluster API's and CAPV's CRDs and webhooks, and
// their controllers in one controller-runtime manager (Plane), with the
// feature gates and timings of the lab's profile.
//
// It owns the management cluster's lifecycle. It imports the lab's leaves
// (labconfig, leftovers) and internal/regularfile, nothing else of
// faultline; the lab assembles it with vcsim and the nodes.
package management
