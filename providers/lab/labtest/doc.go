// Package labtest holds what tests that start the Cluster API lab share.
//
// Test helpers only: it imports the lab and must not be imported by
// non-test code.
package labtest
