// Package nightly tells the tests that make test runs (CI, on every
// change) from those only the nightly run makes (make test-nightly): the
// heavy tiers' representative part runs in both, the rest of them only
// at night.
//
// Test helpers only; it imports nothing of faultline's.
package nightly
