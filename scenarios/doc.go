// Package scenarios is faultline's catalogue: every scenario file in this
// folder, embedded so an installed binary carries them.
//
// It imports nothing of faultline's: the scenario files are data.
package scenarios
