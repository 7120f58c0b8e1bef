// Package preupgrade is the pre-upgrade gate: faultline check's read-only
// findings, then the scenarios a cluster owner accepts before an upgrade
// (label preupgrade): the cluster must replace a lost worker within
// budget before it is asked to replace all of them.
//
// It imports suites/e2e and the engine, and no provider package directly.
package preupgrade
