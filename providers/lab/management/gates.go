package management

import (
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/cluster-api/feature"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// processGates are the feature gates this process's labs run with: set
// once, before the first lab builds its controllers. Cluster API reads the
// gates when it builds a controller and again on every reconcile, so they
// cannot change under running controllers (a controller built with
// ReconcilerRateLimiting off crashes once it is turned on).
var processGates struct {
	sync.Mutex
	set     bool
	gates   map[string]bool
	profile string
}

// setGates sets p's feature gates for this process, or checks that they
// are the ones already set: a lab of another profile in the same process
// is refused.
func setGates(p labconfig.Profile) error {
	processGates.Lock()
	defer processGates.Unlock()
	if processGates.set {
		if !maps.Equal(processGates.gates, p.Gates) {
			return fmt.Errorf("this process already runs labs of the %s profile (feature gates %s); a lab of the %s profile (%s) needs a process of its own: Cluster API's feature gates are process-wide and cannot change under running controllers",
				processGates.profile, gateList(processGates.gates), p.Name, gateList(p.Gates))
		}
		return nil
	}
	if len(p.Gates) > 0 {
		if err := feature.MutableGates.SetFromMap(p.Gates); err != nil {
			return fmt.Errorf("profile %s: feature gates: %w", p.Name, err)
		}
	}
	processGates.set, processGates.gates, processGates.profile = true, maps.Clone(p.Gates), p.Name
	return nil
}

func gateList(g map[string]bool) string {
	if len(g) == 0 {
		return "upstream defaults"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(g)) {
		parts = append(parts, fmt.Sprintf("%s=%t", k, g[k]))
	}
	return strings.Join(parts, ",")
}

// helpGate is a feature gate as a Cluster API manager's --help lists it
// ("MachinePool=true|false (BETA - default=true)").
var helpGate = regexp.MustCompile(`(?m)^\s+(\w+)=true\|false \(`)

// knownGates caches the gates each manager binary lists, by path.
var knownGates sync.Map

// releaseGates are the gates of want that the manager binary at bin
// knows, as its own --help lists them (read once per binary). A binary
// whose help cannot be read gets every gate, and says so when it refuses
// one.
func releaseGates(bin string, want map[string]bool) map[string]bool {
	if len(want) == 0 {
		return nil
	}
	known, ok := knownGates.Load(bin)
	if !ok {
		out, _ := exec.Command(bin, "--help").CombinedOutput() // --help exits 0 or 2 by flag package
		set := map[string]bool{}
		for _, m := range helpGate.FindAllStringSubmatch(string(out), -1) {
			set[m[1]] = true
		}
		known, _ = knownGates.LoadOrStore(bin, set)
	}
	set := known.(map[string]bool)
	if len(set) == 0 {
		return want
	}
	out := map[string]bool{}
	for k, v := range want {
		if set[k] {
			out[k] = v
		}
	}
	return out
}
