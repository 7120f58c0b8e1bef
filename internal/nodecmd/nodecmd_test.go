package nodecmd

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// A quoted command line splits back, in a real shell, into the arguments
// it was made of.
func TestQuoteRoundTrip(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"plain":         {"systemctl", "stop", "kubelet"},
		"static pod":    StaticPod("kube-apiserver", false),
		"process names": ProcessNames,
		"quotes":        {"it's", `"double"`, `back\slash`, "$HOME", "a b", "`id`", ""},
	}
	for name, argv := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			line := `set -- ` + Quote(argv) + `; for a in "$@"; do printf '%s\0' "$a"; done`
			out, err := exec.Command("sh", "-c", line).Output()
			if err != nil {
				t.Fatalf("sh -c %q: %v", line, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if !reflect.DeepEqual(got, argv) {
				t.Errorf("%q split into %q, want %q", Quote(argv), got, argv)
			}
		})
	}
}

func TestRunning(t *testing.T) {
	t.Parallel()
	names := []byte("systemd\ncontainerd\nkubelet\netcd\nkube-controller\n")
	for component, want := range map[string]bool{"etcd": true, "kube-controller-manager": true, "kube-apiserver": false, "kubelet": true, "kube": false} {
		if got := Running(names, component); got != want {
			t.Errorf("%s running: %t, want %t", component, got, want)
		}
	}
}
