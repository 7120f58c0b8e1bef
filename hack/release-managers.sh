#!/usr/bin/env bash
# release-managers.sh CAPI_VERSION CAPV_VERSION builds the managers of one
# Cluster API + CAPV stack from their module sources, through the Go module
# proxy (no registry, no GitHub): Cluster API's core, KCP and CABPK, and
# CAPV, each stamped with its version. They land in the user's cache folder
# by version ($FAULTLINE_RELEASES, default ${XDG_CACHE_HOME:-~/.cache}/
# faultline/releases/capi-VER+capv-VER), outside the checkout, so a machine
# pays each build once; a stack already built is left as it is. It prints
# the folder last. What the proxy serves and how each release builds is in
# ../shared/notes/releases.md (issue "Any release"): this is its first
# manifests/ beside the binaries holds the release's CRDs and webhook
# configurations (copy_manifests in lib.sh), which the lab installs
# before it starts them (providers/lab/management, release.go).
source "$(dirname "$0")/lib.sh"
if [[ $# -ne 2 || "$1" != v* || "$2" != v* ]]; then
  echo "usage: hack/release-managers.sh CAPI_VERSION CAPV_VERSION (e.g. v1.12.5 v1.15.2)" >&2
  exit 2
fi
capi="$1" capv="$2"
root="${FAULTLINE_RELEASES:-${XDG_CACHE_HOME:-${HOME}/.cache}/faultline/releases}"
out="${root}/capi-${capi}+capv-${capv}"
module_dir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }
manifests() { # manifests DIR copies the stack's manifests into DIR/manifests
  rm -rf "$1/manifests"
  copy_manifests "$(module_dir "sigs.k8s.io/cluster-api@${capi}")" \
    "$(module_dir "sigs.k8s.io/cluster-api-provider-vsphere@${capv}")" "$1/manifests"
}
if [[ -f "${out}/VERSIONS" ]]; then
  # A stack built before its manifests were kept gets them now.
  [[ -d "${out}/manifests" ]] || manifests "${out}"
  echo "${out}"
  exit 0
fi
work="$(mktemp -d)"
trap 'chmod -R u+w "${work}" 2>/dev/null; rm -rf "${work}"' EXIT
mkdir -p "${work}/bin"

# stamp PKG VERSION is the -ldflags that set a version package's fields,
# which the managers print at start and report (empty otherwise).
stamp() {
  local pkg="$1" version="$2" major minor
  major="${version#v}"; major="${major%%.*}"
  minor="${version#v*.}"; minor="${minor%%.*}"
  printf -- '-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean' \
    "${pkg}" "${version}" "${pkg}" "${major}" "${pkg}" "${minor}" "${pkg}"
}

# module_copy MODULE@VERSION DIR copies a module's source out of the
# read-only module cache, so that its own replace directives apply when
# it is built there.
module_copy() {
  local src
  src="$(module_dir "$1")"
  if [[ -z "${src}" ]]; then
    echo "release-managers: the module proxy does not serve $1" >&2
    exit 1
  fi
  cp -r "${src}" "$2"
  chmod -R u+w "$2"
}

capi_flags="$(stamp sigs.k8s.io/cluster-api/version "${capi}")"
minor="${capi#v1.}"; minor="${minor%%.*}"
started=$SECONDS
if (( minor >= 14 )); then
  # From v1.14 the core manager is ./core and the module replaces its api
  # module with ./api, which its zip does not hold: both are copied out and
  # the replace pointed at the copy.
  module_copy "sigs.k8s.io/cluster-api@${capi}" "${work}/capi"
  module_copy "sigs.k8s.io/cluster-api/api@${capi}" "${work}/capi-api"
  (cd "${work}/capi" && go mod edit -replace "sigs.k8s.io/cluster-api/api=${work}/capi-api" &&
    echo "release-managers: building Cluster API ${capi} core, KCP and CABPK" >&2 &&
    go build -ldflags "${capi_flags}" -o "${work}/bin/capi-manager" ./core &&
    go build -ldflags "${capi_flags}" -o "${work}/bin/kcp-manager" ./controlplane/kubeadm &&
    go build -ldflags "${capi_flags}" -o "${work}/bin/cabpk-manager" ./bootstrap/kubeadm)
else
  # Up to v1.13 the three managers install from the module as it is (the
  # two kubeadm ones are both named kubeadm: one GOBIN each).
  for m in core:sigs.k8s.io/cluster-api kcp:sigs.k8s.io/cluster-api/controlplane/kubeadm cabpk:sigs.k8s.io/cluster-api/bootstrap/kubeadm; do
    name="${m%%:*}" pkg="${m#*:}"
    echo "release-managers: building ${pkg}@${capi}" >&2
    GOBIN="${work}/gobin-${name}" go install -ldflags "${capi_flags}" "${pkg}@${capi}"
    mv "${work}/gobin-${name}"/* "${work}/bin/${name/core/capi}-manager"
  done
fi
echo "release-managers: Cluster API ${capi} built in $((SECONDS - started)) s" >&2
started=$SECONDS
# CAPV's replace directives (its Cluster API, vm-operator) refuse
# `go install pkg@version`: it is built inside a copy of its module.
module_copy "sigs.k8s.io/cluster-api-provider-vsphere@${capv}" "${work}/capv"
echo "release-managers: building CAPV ${capv}" >&2
(cd "${work}/capv" && go build -ldflags "$(stamp sigs.k8s.io/cluster-api-provider-vsphere/pkg/version "${capv}")" -o "${work}/bin/capv-manager" .)
echo "release-managers: CAPV ${capv} built in $((SECONDS - started)) s" >&2
manifests "${work}/bin"
printf 'sigs.k8s.io/cluster-api %s\nsigs.k8s.io/cluster-api-provider-vsphere %s\n' "${capi}" "${capv}" >"${work}/bin/VERSIONS"
mkdir -p "${root}"
rm -rf "${out}.tmp"
mv "${work}/bin" "${out}.tmp"
mv "${out}.tmp" "${out}"
echo "${out}"
