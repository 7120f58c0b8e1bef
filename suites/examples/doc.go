// Package examples shows faultline's scenarios in a user's own go test
// suite, through sigs.k8s.io/e2e-framework.
//
// It imports faultline only as a user's module would: its public packages,
// never internal ones.
package examples
