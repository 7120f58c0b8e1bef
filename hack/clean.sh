#!/usr/bin/env bash
# Removes build output and artifacts. What takes minutes to build stays
# unless asked:
#   CLEAN_ENVTEST=1  the kube-apiserver and etcd of hack/envtest.sh (all of bin/,
#                    and their copy in ~/.cache/faultline/envtest)
#   CLEAN_KIND=1     the kind node image: bin/kind (the cached binaries), its
#                    tarball in ~/.cache/faultline/kind, and the images
#                    hack/kind-image.sh tagged in docker
#                    (faultline.dev/kind-node and kind's load balancer image).
#                    Clusters stay: 'faultline kind down' deletes them.
source "$(dirname "$0")/lib.sh"
rm -rf bin/faultline _artifacts
if [[ "${CLEAN_KIND:-}" == "1" ]]; then
  if docker version >/dev/null 2>&1; then
    lb_image="$(sed -n 's/^const Image = "\(.*\)"$/\1/p' "$(go list -m -f '{{.Dir}}' sigs.k8s.io/kind)/pkg/cluster/internal/loadbalancer/const.go")"
    { docker images --format '{{.Repository}}:{{.Tag}}' faultline.dev/kind-node; echo "${lb_image}"; } | xargs -r docker rmi 2>/dev/null || true
  fi
  rm -rf bin/kind "$(faultline_cache)/kind"
fi
if [[ "${CLEAN_ENVTEST:-}" == "1" ]]; then
  rm -rf bin "$(faultline_cache)/envtest"
fi
