// Command faultline runs disaster scenarios against Cluster API managed
// vSphere clusters, the embedded lab and kind clusters.
//
// Process-wide state is set here and nowhere in the libraries: PATH (the
// kind docker shim, below), and the libraries' loggers when a lab starts
// (lab.RouteLibraryLogs).
//
// Each command parses its flags, calls one library function (most of them
// in session, the front door) and prints: no library logic lives here. It
// imports session, the framework, artifacts, and the kind and lab
// providers for their own subcommands and configuration.
package main
