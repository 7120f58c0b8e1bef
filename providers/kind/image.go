package kind

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// NewestImage is the local image of ImageRepository of the highest
// Kubernetes version, the most recently built of that version: an older
// version's image built later (KUBE_VERSION=1.30.14 hack/kind-image.sh)
// does not become the default.
func NewestImage(ctx context.Context, d Docker) (string, error) {
	return newestImage(ctx, d, "")
}

// ImageOf is the newest local image of ImageRepository of Kubernetes
// version (v1.34.3): hack/kind-image.sh tags each "v<version>-<recipe>".
func ImageOf(ctx context.Context, d Docker, version string) (string, error) {
	v := "v" + strings.TrimPrefix(version, "v")
	img, err := newestImage(ctx, d, v+"-")
	if err != nil {
		return "", fmt.Errorf("no %s image of Kubernetes %s here: build one with KUBE_VERSION=%s hack/kind-image.sh (no registry needed)", ImageRepository, v, strings.TrimPrefix(v, "v"))
	}
	return img, nil
}

// newestImage is the local image of ImageRepository whose tag starts with
// prefix, of the highest Kubernetes version its tag names, and of those
// the most recently created. A tag that names no version ranks below
// every one that does.
func newestImage(ctx context.Context, d Docker, prefix string) (string, error) {
	out, err := d.Run(ctx, "images", "--format", "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}", ImageRepository)
	if err != nil {
		return "", err
	}
	var best, bestAt string
	var bestVersion *version.Version
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ref, at, ok := strings.Cut(line, "\t")
		if !ok || strings.HasSuffix(ref, ":<none>") || !strings.HasPrefix(ref, ImageRepository+":"+prefix) {
			continue
		}
		v := tagVersion(strings.TrimPrefix(ref, ImageRepository+":"))
		if best == "" || newer(v, at, bestVersion, bestAt) {
			best, bestAt, bestVersion = ref, at, v
		}
	}
	if best == "" {
		return "", fmt.Errorf("no %s image here: build one with hack/kind-image.sh (no registry needed), or pass --image kindest/node:v1.35.x where a registry is reachable", ImageRepository)
	}
	return best, nil
}

// tagVersion is the Kubernetes version of a tag "v1.35.4-<recipe>", or
// nil.
func tagVersion(tag string) *version.Version {
	v, _, _ := strings.Cut(tag, "-")
	parsed, err := version.ParseSemantic(v)
	if err != nil {
		return nil
	}
	return parsed
}

// newer reports whether an image of version v created at is to be chosen
// over the best so far.
func newer(v *version.Version, at string, best *version.Version, bestAt string) bool {
	switch {
	case v != nil && best == nil:
		return true
	case v == nil && best != nil:
		return false
	case v != nil && !v.EqualTo(best):
		return v.GreaterThan(best)
	}
	return at > bestAt
}

// nodeImage is the node image to create from: image, or the newest local
// one when image is "", which must be here or pullable.
func nodeImage(ctx context.Context, docker Docker, image string) (string, error) {
	if image == "" {
		img, err := NewestImage(ctx, docker)
		if err != nil {
			return "", err
		}
		image = img
	}
	if _, err := docker.Run(ctx, "image", "inspect", image); err != nil {
		if _, perr := docker.Run(ctx, "pull", image); perr != nil {
			return "", fmt.Errorf("node image %s is not here and cannot be pulled (build one with hack/kind-image.sh): %w", image, perr)
		}
	}
	return image, nil
}
