// Package scenario is faultline's scenario language: the model a scenario
// file maps onto (Scenario and its steps), the strict YAML decoding that
// records where each field stands, parameters (${name}, --set), target
// references (${target.NAME}), and the validation that reports every
// problem of a file at once, naming its file, line and field.
//
// The words a scenario may use (faults and probes) come from the engine as
// a Vocabulary; this package only checks them. It imports the provider
// contract (providers, for Selector and Capability) and nothing else of
// faultline's: not the engine, not the checks, not any provider.
package scenario
