package lab

import "github.com/faultline-dev/faultline/providers/lab/management"

// RunShim must be the first call of main, and of TestMain in tests that
// start a lab (management.RunShim): started in place of a lab's
// kube-apiserver or etcd, the process becomes it there.
func RunShim() { management.RunShim() }

// Processes lists the processes the lab in dir started (kube-apiserver,
// etcd), alive or not (management.Processes).
func Processes(dir string) ([]management.Process, error) { return management.Processes(dir) }

// FindAssets finds the folder of kube-apiserver and etcd
// (management.FindAssets).
func FindAssets(explicit string) (string, error) { return management.FindAssets(explicit) }

// AssetsEnv names the folder of kube-apiserver and etcd.
const AssetsEnv = management.AssetsEnv
