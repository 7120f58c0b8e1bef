#!/usr/bin/env bash
# clusterctl.sh [VERSION] builds Cluster API's clusterctl at VERSION
# (default: the release go.mod requires) from its module source through
# the Go module proxy, into the cache by version outside the checkout,
# and prints its path. A fleet's SRE has clusterctl; this machine cannot
# download it. The tests run it against the lab (issue "What the clients
# see"): the lab writes the configuration it reads with no reach to
# GitHub (management.WriteClusterctlConfig).
source "$(dirname "$0")/lib.sh"
version="${1:-$(go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)}"
out="$(faultline_cache)/clusterctl/${version}"
if [[ ! -x "${out}/clusterctl" ]]; then
  echo "clusterctl.sh: building clusterctl ${version}" >&2
  rm -rf "${out}.tmp"
  mkdir -p "${out}.tmp"
  (cd "${out}.tmp" && GOBIN="${out}.tmp" GOFLAGS= go install \
    -ldflags "$(stamp sigs.k8s.io/cluster-api/version "${version}")" "sigs.k8s.io/cluster-api/cmd/clusterctl@${version}")
  rm -rf "${out}"
  mv "${out}.tmp" "${out}"
fi
echo "${out}/clusterctl"
