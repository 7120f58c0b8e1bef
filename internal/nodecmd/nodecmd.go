package nodecmd

import (
	"path"
	"slices"
	"strings"
)

// Manifests is where the kubelet reads static pods; Parked is where a
// stopped component's manifest waits (outside it, so the kubelet stops the
// pod).
const (
	Manifests = "/etc/kubernetes/manifests"
	Parked    = "/etc/kubernetes/faultline-parked"
)

// Kubelet starts or stops the kubelet service.
func Kubelet(running bool) []string {
	verb := "stop"
	if running {
		verb = "start"
	}
	return []string{"systemctl", verb, "kubelet"}
}

// StaticPod moves component's manifest out of Manifests (running false) or
// back. It is idempotent: a manifest already where it should be is left
// alone. The component is one of providers.StaticPodComponents, checked
// when the scenario loads; the script takes the paths as arguments.
func StaticPod(component string, running bool) []string {
	file := component + ".yaml"
	from, to := path.Join(Manifests, file), path.Join(Parked, file)
	if running {
		from, to = to, from
	}
	const script = `set -e; if [ -f "$2" ] && [ ! -f "$1" ]; then exit 0; fi; mkdir -p "$(dirname "$2")"; mv "$1" "$2"`
	return []string{"sh", "-c", script, "sh", from, to}
}

// ProcessNames prints the name of every process, a line each. A node's
// pods' processes are the node's, so a static pod's component is among
// them while it runs.
var ProcessNames = []string{"sh", "-c", "cat /proc/[0-9]*/comm 2>/dev/null; true"}

// Running tells whether ProcessNames' output names the component. The
// kernel keeps 15 characters of a command's name.
func Running(processNames []byte, component string) bool {
	comm := component
	if len(comm) > 15 {
		comm = comm[:15]
	}
	return slices.Contains(strings.Fields(string(processNames)), comm)
}

// Quote joins argv into one line that a POSIX shell splits back into argv.
func Quote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
