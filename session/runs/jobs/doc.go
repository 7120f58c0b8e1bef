// Package jobs carries out the scenarios of a run of several as one
// Indexed Job (batch/v1) on a Kubernetes cluster: one scenario per index,
// each pod running faultline's image with a lab of its own (the simulated
// tier: an API server, etcd and vcsim in the pod), its progress streamed
// back through its log and its run folder sent back at the end of it
// (Emit), into the local run folder as if it had run here.
//
// The Job, its pods and the ConfigMap of the scenarios are deleted at the
// end, on an interrupt and on a failure. A pod deleted mid-run undoes its
// faults (SIGTERM, as Ctrl-C) and sends back an interrupted result; one
// killed outright is reported interrupted by the executor, its lab gone
// with it.
//
// It imports session/runs and the Kubernetes API; nothing imports it but
// the CLI.
package jobs
