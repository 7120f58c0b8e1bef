package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// list's table fits 120 columns outside a terminal, names each scenario's
// tier and seeds, and -o wide adds the labels and requirements uncut.
func TestListFits(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := execute([]string{"list"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if n := len([]rune(line)); n > 120 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	if !strings.Contains(out.String(), "NAME") || !regexp.MustCompile(`(?m)^etcd-leader-stuck +core +003 +Seed 003`).MatchString(out.String()) {
		t.Errorf("list:\n%s", out.String())
	}
	out.Reset()
	if code := execute([]string{"list", "-o", "wide", "-l", "seed-003"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "EtcdLeadership,VMLifecycle,ClusterAPI,Objects") {
		t.Errorf("list -o wide: exit %d:\n%s", code, out.String())
	}
}
