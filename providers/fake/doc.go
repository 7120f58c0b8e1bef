// Package fake is an in-memory provider for unit tests of the engine: it
// keeps VMs as plain state, records every call, fails on demand, and can
// apply a fault's effect after a delay, as a slow vCenter would.
//
// Like every provider, it imports the contract (providers) and no other
// faultline package but internal ones; it must not import framework,
// session, cmd or suites.
package fake
