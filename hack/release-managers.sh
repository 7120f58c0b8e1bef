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
  echo "usage: hack/release-managers.sh CAPI_VERSION CAPV_VERSION (e.g. v1.12.10 v1.15.2)" >&2
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
# A stack is built when its files are those its build recorded the
# SHA-256 of (SHA256SUMS, written last); one built before they were, or
# changed since, is built again.
if grep -qs '^webhooks 127.0.0.1$' "${out}/VERSIONS" && [[ -f "${out}/SHA256SUMS" ]] &&
  (cd "${out}" && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1); then
  echo "${out}"
  exit 0
fi
work="$(mktemp -d)"
trap 'chmod -R u+w "${work}" 2>/dev/null; rm -rf "${work}"' EXIT
mkdir -p "${work}/bin"

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

# webhooks_on_loopback MODULE_DIR makes the module copied into MODULE_DIR
# build with a copy of its controller-runtime (the version it builds with,
# through a replace directive) whose webhook server listens on 127.0.0.1
# when no host is set. The managers take a webhook port but no host, and
# faultline's servers listen on 127.0.0.1 only; this is the one change
# made to a release, and it touches no controller.
webhooks_on_loopback() {
  local crdir copy="$1.controller-runtime"
  crdir="$(cd "$1" && go mod download sigs.k8s.io/controller-runtime && go list -m -f '{{.Dir}}' sigs.k8s.io/controller-runtime)"
  cp -r "${crdir}" "${copy}"
  chmod -R u+w "${copy}"
  sed -i 's/net\.JoinHostPort(s\.Options\.Host, /net.JoinHostPort(faultlineLoopback(s.Options.Host), /g' "${copy}/pkg/webhook/server.go"
  if ! grep -q 'tls.Listen("tcp", net.JoinHostPort(faultlineLoopback(' "${copy}/pkg/webhook/server.go"; then
    echo "release-managers: controller-runtime's webhook server (${crdir}) no longer listens where faultline places it on 127.0.0.1" >&2
    exit 1
  fi
  printf '\n// faultlineLoopback is added by faultline'"'"'s release-managers.sh.\nfunc faultlineLoopback(h string) string {\n\tif h == "" {\n\t\treturn "127.0.0.1"\n\t}\n\treturn h\n}\n' >>"${copy}/pkg/webhook/server.go"
  (cd "$1" && go mod edit -replace "sigs.k8s.io/controller-runtime=${copy}")
}

capi_flags="$(stamp sigs.k8s.io/cluster-api/version "${capi}")"
minor="${capi#v1.}"; minor="${minor%%.*}"
started=$SECONDS
# Each module is built inside a copy of it, so that its own replace
# directives apply (go install pkg@version refuses them). From v1.14 the
# core manager is ./core and the module replaces its api module with
# ./api, which its zip does not hold: that one is copied out too and the
# replace pointed at the copy.
module_copy "sigs.k8s.io/cluster-api@${capi}" "${work}/capi"
core=.
if (( minor >= 14 )); then
  core=./core
  module_copy "sigs.k8s.io/cluster-api/api@${capi}" "${work}/capi-api"
  (cd "${work}/capi" && go mod edit -replace "sigs.k8s.io/cluster-api/api=${work}/capi-api")
fi
webhooks_on_loopback "${work}/capi"
echo "release-managers: building Cluster API ${capi} core, KCP and CABPK" >&2
(cd "${work}/capi" &&
  go build -ldflags "${capi_flags}" -o "${work}/bin/capi-manager" "${core}" &&
  go build -ldflags "${capi_flags}" -o "${work}/bin/kcp-manager" ./controlplane/kubeadm &&
  go build -ldflags "${capi_flags}" -o "${work}/bin/cabpk-manager" ./bootstrap/kubeadm)
echo "release-managers: Cluster API ${capi} built in $((SECONDS - started)) s" >&2
started=$SECONDS
module_copy "sigs.k8s.io/cluster-api-provider-vsphere@${capv}" "${work}/capv"
webhooks_on_loopback "${work}/capv"
echo "release-managers: building CAPV ${capv}" >&2
(cd "${work}/capv" && go build -ldflags "$(stamp sigs.k8s.io/cluster-api-provider-vsphere/pkg/version "${capv}")" -o "${work}/bin/capv-manager" .)
echo "release-managers: CAPV ${capv} built in $((SECONDS - started)) s" >&2
manifests "${work}/bin"
printf 'sigs.k8s.io/cluster-api %s\nsigs.k8s.io/cluster-api-provider-vsphere %s\nwebhooks 127.0.0.1\n' "${capi}" "${capv}" >"${work}/bin/VERSIONS"
# The digest of every file, checked before each start (management.Verify).
(cd "${work}/bin" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum >"${work}/SHA256SUMS") && mv "${work}/SHA256SUMS" "${work}/bin/SHA256SUMS"
mkdir -p "${root}"
rm -rf "${out}.tmp"
mv "${work}/bin" "${out}.tmp"
rm -rf "${out}" # a build of an earlier form of this script
mv "${out}.tmp" "${out}"
echo "${out}"
