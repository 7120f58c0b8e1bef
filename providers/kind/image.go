package kind

import (
	"context"
	"fmt"
	"strings"
)

// NewestImage is the newest local image of ImageRepository.
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

// newestImage is the newest local image of ImageRepository whose tag
// starts with prefix.
func newestImage(ctx context.Context, d Docker, prefix string) (string, error) {
	out, err := d.Run(ctx, "images", "--format", "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}", ImageRepository)
	if err != nil {
		return "", err
	}
	var best, bestAt string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ref, at, ok := strings.Cut(line, "\t")
		if ok && !strings.HasSuffix(ref, ":<none>") && strings.HasPrefix(ref, ImageRepository+":"+prefix) && at > bestAt {
			best, bestAt = ref, at
		}
	}
	if best == "" {
		return "", fmt.Errorf("no %s image here: build one with hack/kind-image.sh (no registry needed), or pass --image kindest/node:v1.35.x where a registry is reachable", ImageRepository)
	}
	return best, nil
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
