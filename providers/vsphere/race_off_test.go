//go:build !race

package vsphere_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
