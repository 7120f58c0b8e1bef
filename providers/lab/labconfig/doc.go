// Package labconfig is the leaf every part of the embedded lab shares: the
// shape of a lab cluster (LabSpec, which a scenario's spec.lab is, with
// its Duration), a named cluster of that shape (ClusterSpec), the time
// profile (Profile), and a map for one writer and many readers (Map).
//
// It owns the lab's configuration types and their rules. It imports
// nothing of faultline: every lab package, the scenario language and the
// front door import it.
package labconfig
