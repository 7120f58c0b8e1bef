#!/usr/bin/env bash
# Builds faultline's container image with no registry and no base image:
# the static binary (CGO off), the host's CA bundle (for vCenter's and the
# API servers' TLS), a non-root user, and the lab's kube-apiserver and etcd
# (hack/envtest.sh, static: a pod of `run --on-cluster` runs a lab of its
# own), imported with `docker import`. The
# tag is versioned, never latest: faultline.dev/faultline:v0.1.0-<commit>
# (VERSION overrides it); deploy/README.md says how the manifests take it.
# Prints the tag last.
source "$(dirname "$0")/lib.sh"
version="${VERSION:-v0.1.0-$(git rev-parse --short=10 HEAD)}"
tag="faultline.dev/faultline:${version}"
command -v docker >/dev/null 2>&1 || { echo "hack/image.sh: docker is missing (hack/docker.sh installs and starts it)" >&2; exit 1; }
root="$(mktemp -d)"
trap 'rm -rf "${root}"' EXIT
mkdir -p "${root}/etc/ssl/certs" "${root}/tmp" "${root}/home/faultline"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "${root}/faultline" ./cmd/faultline
cp /etc/ssl/certs/ca-certificates.crt "${root}/etc/ssl/certs/"
kube_version="${KUBE_VERSION:-1.35.4}"
KUBE_VERSION="${kube_version}" bash hack/envtest.sh >&2
mkdir -p "${root}/usr/local/kubebuilder/bin"
cp "bin/envtest/${kube_version}-linux-amd64/kube-apiserver" "bin/envtest/${kube_version}-linux-amd64/etcd" "${root}/usr/local/kubebuilder/bin/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nfaultline:x:65532:65532:faultline:/home/faultline:/sbin/nologin\n' >"${root}/etc/passwd"
printf 'root:x:0:\nfaultline:x:65532:\n' >"${root}/etc/group"
chmod 1777 "${root}/tmp"
# The run folders (_artifacts) go to the working directory.
tar -C "${root}" --numeric-owner --owner=0 --group=0 -c . |
  docker import \
    --change 'ENTRYPOINT ["/faultline"]' \
    --change 'USER 65532:65532' \
    --change 'WORKDIR /tmp' \
    --change 'ENV HOME=/tmp' \
    --change 'ENV KUBEBUILDER_ASSETS=/usr/local/kubebuilder/bin' \
    --message "faultline ${version}" - "${tag}" >/dev/null
echo "${tag}"
