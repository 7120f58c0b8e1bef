package kind

import (
	"context"
	"fmt"
	"strings"
)

// NewestImage is the newest local image of ImageRepository.
func NewestImage(ctx context.Context, d Docker) (string, error) {
	out, err := d.Run(ctx, "images", "--format", "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}", ImageRepository)
	if err != nil {
		return "", err
	}
	var best, bestAt string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ref, at, ok := strings.Cut(line, "\t")
		if ok && !strings.HasSuffix(ref, ":<none>") && at > bestAt {
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
