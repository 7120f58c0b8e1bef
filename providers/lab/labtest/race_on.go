//go:build race

package labtest

const raceEnabled = true
