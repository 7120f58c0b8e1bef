package kind

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"
)

// Record is what faultline keeps about a kind cluster it creates, in
// <state>/<name>/cluster.json, written before the cluster is: `faultline
// kind down` finds and removes everything even after a crash.
type Record struct {
	Name    string    `json:"name"`
	Image   string    `json:"image"`
	Created time.Time `json:"created"`
	// Kubeconfig is the cluster's own kubeconfig file (not ~/.kube/config).
	Kubeconfig string `json:"kubeconfig"`
	// Shim is the docker shim written for this host's quirks ("" if none).
	Shim   string `json:"shim,omitempty"`
	Quirks string `json:"quirks"`
	// NetworkCreated: the kind network did not exist before; it goes with
	// the last cluster on it.
	NetworkCreated bool `json:"networkCreated,omitempty"`
}

// DefaultState is faultline's folder of kind records: the user's cache
// folder's faultline/kind.
func DefaultState() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the cache folder for faultline's kind records: %w", err)
	}
	return filepath.Join(dir, "faultline", "kind"), nil
}

// Recorded lists the clusters faultline has records of, sorted.
func Recorded(state string) ([]string, error) {
	entries, err := os.ReadDir(state)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if _, err := readRecord(filepath.Join(state, e.Name())); err == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// ShimDir is where Up writes the docker shim for this host's quirks, one
// for every cluster of the state folder. kind runs the first `docker` on
// PATH and has no option for another, and PATH is the process's: so the
// process that creates clusters starts with ShimDir first on its PATH
// (ShimPATH), set by main or by a suite, never by this package.
func ShimDir(state string) string { return filepath.Join(state, "shim") }

// ShimPATH is path with ShimDir(state) first. Without quirks the folder
// holds no docker and lookups go on to the real one.
func ShimPATH(state, path string) string {
	return ShimDir(state) + string(os.PathListSeparator) + path
}

// shimFirst tells whether this process's PATH finds the shim first.
func shimFirst(state string) bool {
	found, err := exec.LookPath("docker")
	return err == nil && filepath.Dir(found) == ShimDir(state)
}

// KubeconfigPath is the kubeconfig file of a cluster faultline created.
func KubeconfigPath(state, name string) string {
	return filepath.Join(state, name, "kubeconfig")
}

// KubeconfigFile is a kubeconfig file of the kind cluster named name: the
// one faultline keeps for a cluster it created, or else kind's, written to
// a temporary file that cleanup removes.
func KubeconfigFile(state, name string) (path string, cleanup func(), err error) {
	if IsRecorded(state, name) {
		return KubeconfigPath(state, name), func() {}, nil
	}
	raw, err := kindcluster.NewProvider(kindcluster.ProviderWithDocker()).KubeConfig(name, false)
	if err != nil {
		return "", nil, fmt.Errorf("kind cluster %s: %w", name, err)
	}
	f, err := os.CreateTemp("", "faultline-kind-*.kubeconfig")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.Remove(f.Name()) }
	if _, err := f.WriteString(raw); err != nil {
		f.Close()
		cleanup()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}

// IsRecorded tells whether faultline created the cluster named name.
func IsRecorded(state, name string) bool {
	_, err := readRecord(filepath.Join(state, name))
	return err == nil
}

// othersRecorded tells whether faultline has records of other clusters;
// when it cannot tell, it says yes (the network stays).
func othersRecorded(state, name string) bool {
	names, err := Recorded(state)
	if err != nil {
		return true
	}
	for _, n := range names {
		if n != name {
			return true
		}
	}
	return false
}

func writeRecord(dir string, rec *Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cluster.json"), append(b, '\n'), 0o600)
}

func readRecord(dir string) (*Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return nil, err
	}
	rec := &Record{}
	if err := json.Unmarshal(b, rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "cluster.json"), err)
	}
	return rec, nil
}
