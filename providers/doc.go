// Package providers is the provider contract: the one place that says what
// a provider is and what each of its capabilities promises. It holds
// Provider, Object and Selector, every capability interface with the state
// types they return, the sentinel errors, the typed object attributes, and
// the rules that derive a provider's capabilities from the interfaces it
// implements.
//
// Open provider.go first: every method's comment is its contract. The
// concrete providers live in the packages below this one (vsphere, capi,
// kind, lab, fake); the engine (framework/engine) and the checks
// (framework/check) use only this package to reach them.
//
// This package imports nothing of faultline's: not framework, not any
// provider package.
package providers
