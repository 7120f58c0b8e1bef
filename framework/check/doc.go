// Package check holds the analysers of `faultline check`: rules that read
// a cluster's objects and report the hazards the seed incidents grew from
// (an admission webhook that can block system pods, a Calico IPPool that
// does not fit the nodes, health checks that cannot remediate, etcd
// quorum margins and membership, orphan VMs). Each rule is a pure function
// over what Read... returned, so it is tested with plain objects.
//
// check reads through the provider contract (providers.Objects,
// providers.Inventory) and must not import the engine, the scenario
// language, a provider package, cmd, suites or artifacts.
package check
