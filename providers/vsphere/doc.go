// Package vsphere injects VM faults through the vSphere SOAP API with
// govmomi: the same code drives a real vCenter and the vcsim simulator.
//
// Connection settings follow govc's environment (GOVC_URL, GOVC_USERNAME,
// GOVC_PASSWORD, GOVC_INSECURE, GOVC_TLS_CA_CERTS, GOVC_TLS_KNOWN_HOSTS),
// TLS is verified unless Insecure is set, and the password never appears in
// an error, a log line or a ProviderRef.
//
// It imports the contract (providers) and internal packages; it must not
// import framework, another provider, session, cmd or suites.
package vsphere
