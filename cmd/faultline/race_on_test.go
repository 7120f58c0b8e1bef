//go:build race

package main

// raceEnabled: the lab runs upstream controllers that race among themselves
// (KCP's etcd proxy SetWriteDeadline, client-go's SpdyRoundTripper), so lab
// tests run in a pass without -race (hack/test.sh).
const raceEnabled = true
