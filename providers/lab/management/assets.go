package management

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv is the variable setup-envtest and controller-runtime use for the
// folder holding kube-apiserver and etcd.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// FindAssets returns the folder holding kube-apiserver and etcd: explicit
// (a flag), then $KUBEBUILDER_ASSETS, then setup-envtest's cache, then
// ./bin/envtest (hack/envtest.sh), then bin/envtest next to the running
// binary, then ~/.cache/faultline/envtest. None holding both binaries is an
// error naming every place looked and how to build them.
func FindAssets(explicit string) (string, error) {
	var looked []string
	try := func(dir string) bool {
		looked = append(looked, dir)
		return hasAssets(dir)
	}
	if explicit != "" {
		if try(explicit) {
			return explicit, nil
		}
		return "", fmt.Errorf("--assets %s: no kube-apiserver and etcd there; build them with hack/envtest.sh", explicit)
	}
	if dir := os.Getenv(AssetsEnv); dir != "" && try(dir) {
		return dir, nil
	}
	var roots []string
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(home, ".local/share/kubebuilder-envtest/k8s"))
	}
	roots = append(roots, filepath.Join("bin", "envtest"))
	if exe, err := os.Executable(); err == nil {
		roots = append(roots, filepath.Join(filepath.Dir(exe), "envtest"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(home, ".cache/faultline/envtest"))
	}
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		var dirs []string
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
		// The newest version first.
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		if len(dirs) == 0 {
			looked = append(looked, root)
		}
		for _, d := range dirs {
			if try(filepath.Join(root, d)) {
				return filepath.Join(root, d), nil
			}
		}
	}
	return "", errors.New("kube-apiserver and etcd not found (looked in " + strings.Join(looked, ", ") +
		"); build them from source with hack/envtest.sh (about 4 minutes), or point --assets or " + AssetsEnv + " at a folder that has them")
}

func hasAssets(dir string) bool {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

func envtestAdmin() envtest.User {
	return envtest.User{Name: "faultline-admin", Groups: []string{"system:masters"}}
}
