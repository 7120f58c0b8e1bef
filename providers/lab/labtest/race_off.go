//go:build !race

package labtest

// RaceEnabled tells whether the tests run under -race.
const RaceEnabled = false
