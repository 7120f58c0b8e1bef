// Package kind injects node faults into kind clusters through docker and
// reads them through their real API server: a real kube-apiserver, etcd,
// kube-controller-manager and kubelets, so webhook failures, etcd quorum
// loss and node loss behave as on any kubeadm cluster.
//
// Up and Down create and delete clusters with sigs.k8s.io/kind as a
// library, from the node image hack/kind-image.sh builds with no registry,
// and write a record before anything is created so that Down cleans up
// after a crash. Open reaches an existing cluster by name. Docker is run
// through the Docker interface with argument slices; on a docker host that
// cannot run --privileged containers, WriteShim adapts kind's commands
// (DetectQuirks finds what to adapt). PodNetwork stands in for kindnetd.
//
// It imports the contract (providers), capi (kind's clusters are read as a
// workload cluster) and internal packages; it must not import framework,
// session, cmd or suites.
package kind
