// Package nodecmd holds the commands that node faults run in a node's
// operating system, whichever way they get there: docker exec on a kind
// node, VMware Tools guest operations on a vSphere VM. Each is an argument
// list; Quote turns one into the single command line guest operations take.
//
// It imports nothing of faultline's.
package nodecmd
