package main

import (
	"slices"
	"testing"
)

// The replay base keeps the flags that say where a run went and leaves out
// output, selection, per-run values and user names.
func TestReplayBase(t *testing.T) {
	t.Parallel()
	cmd := newRunCommand()
	if err := cmd.ParseFlags([]string{"--provider", "kind", "--kind-cluster", "night", "--set", "a=1", "--seed", "4", "-o", "json",
		"--artifacts", "/tmp/x", "--allow-context", "kind-night,kind-day", "--vcenter-username", "admin", "--timeout", "5m", "--vcenter-url", "https://admin:hunter2@vc.example.com/sdk"}); err != nil {
		t.Fatal(err)
	}
	got := replayBase(cmd.Flags(), func(string) string { return "" })
	want := []string{"faultline", "run", "--allow-context=kind-night", "--allow-context=kind-day", "--kind-cluster=night", "--provider=kind", "--timeout=5m0s", "--vcenter-url=https://vc.example.com/sdk"}
	if !slices.Equal(got, want) {
		t.Errorf("replay base %q, want %q", got, want)
	}
}

// TestReplayBaseEnv: where a capi or vsphere run went by the environment
// ($KUBECONFIG, $GOVC_URL and its TLS settings), its replay names as
// flags, without credentials; a flag given wins, and the lab's replay
// takes nothing from the environment.
func TestReplayBaseEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"KUBECONFIG": "/home/sre/mgmt.kubeconfig", "GOVC_URL": "https://sre:secret@vc.example.com/sdk",
		"GOVC_TLS_CA_CERTS": "/etc/vc-ca.pem", "GOVC_PASSWORD": "secret", "GOVC_USERNAME": "sre"}
	getenv := func(k string) string { return env[k] }
	cmd := newRunCommand()
	if err := cmd.ParseFlags([]string{"--provider", "capi", "--vcenter-ca-file", "/etc/other.pem"}); err != nil {
		t.Fatal(err)
	}
	got := replayBase(cmd.Flags(), getenv)
	want := []string{"faultline", "run", "--kubeconfig=/home/sre/mgmt.kubeconfig", "--vcenter-url=https://vc.example.com/sdk", "--provider=capi", "--vcenter-ca-file=/etc/other.pem"}
	if !slices.Equal(got, want) {
		t.Errorf("replay base %q, want %q", got, want)
	}
	lab := newRunCommand()
	if got := replayBase(lab.Flags(), getenv); !slices.Equal(got, []string{"faultline", "run"}) {
		t.Errorf("the lab's replay took the environment: %q", got)
	}
}
