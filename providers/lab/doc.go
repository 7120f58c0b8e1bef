// Package lab is the embedded lab: infrastructure that runs inside the
// faultline process, so a scenario runs end to end with no vCenter and no
// cluster. Today it is govmomi's vCenter simulator (vcsim), served with TLS
// on 127.0.0.1 and driven through the real vsphere provider over SOAP.
//
// vcsim-only code lives here so that production providers never import the
// simulator.
//
// It imports the contract (providers), the scenario language (the spec.lab
// shape, labconfig.LabSpec), capi and vsphere (the lab is a Cluster API
// management cluster with a vCenter), kind's docker code (for real nodes)
// and internal packages; it must not import the engine, the checks,
// session, cmd or suites.
package lab
