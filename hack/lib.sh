# Sourced by hack/*.sh: strict mode, repo root, Go on PATH.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/go/bin:${PATH}"

# faultline_cache is the folder of faultline's heavy builds, by version,
# outside the checkout (as the lab's built releases are): envtest's
# binaries and the kind node image, which a fresh clone would build again.
faultline_cache() { echo "${FAULTLINE_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/faultline}"; }

# go_tools_module DIR MODULE@VERSION PKG... makes DIR a throw-away module
# that requires MODULE and imports each PKG from a tools.go, tidied through
# the module proxy: the way to build a dependency's commands with no
# prebuilt binary. For k8s.io/kubernetes, each staging module
# (./staging/src/k8s.io/X in its go.mod) is replaced by its published v0.X
# release.
go_tools_module() {
  local dir="$1" module="${2%@*}" version="${2#*@}"
  shift 2
  mkdir -p "${dir}"
  (
    cd "${dir}"
    printf 'module faultline.dev/tools/%s\n\ngo 1.25\n\nrequire %s %s\n' "$(basename "${dir}")" "${module}" "${version}" >go.mod
    if [[ "${module}" == k8s.io/kubernetes ]]; then
      local kube_mod staging="v0.${version#v1.}"
      kube_mod="$(GOFLAGS=-mod=mod go mod download -json "${module}@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
      if [[ -z "${kube_mod}" || ! -f "${kube_mod}" ]]; then
        echo "could not download ${module}@${version}'s go.mod through the module proxy" >&2
        exit 1
      fi
      sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9.-]*\) => ./staging/.*#\1#p' "${kube_mod}" | while read -r mod; do
        echo "replace ${mod} => ${mod} ${staging}" >>go.mod
      done
    fi
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      printf '\t_ "%s"\n' "$@" | sort
      printf ')\n'
    } >tools.go
    GOFLAGS=-mod=mod go mod tidy >/dev/null
  )
}

# kube_ldflags VERSION are the -ldflags that make a Kubernetes command
# report vVERSION (kubeadm checks it), stripped.
kube_ldflags() {
  local pkg=k8s.io/component-base/version minor="${1#*.}"
  minor="${minor%%.*}"
  echo "-s -w -X ${pkg}.gitVersion=v$1 -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean"
}

# copy_manifests CAPI_DIR CAPV_DIR OUT copies the CRDs and webhook
# configurations of Cluster API (core, CABPK, KCP) and CAPV (govmomi mode)
# from two module sources into OUT/{core,bootstrap,controlplane,
# infrastructure}/{crd/,webhooks.yaml}, the layout the lab reads. From
# Cluster API v1.14 the core's are under core/config.
copy_manifests() {
  local capi="$1" capv="$2" out="$3" core="$1/config"
  [[ -d "${capi}/core/config/crd" ]] && core="${capi}/core/config"
  mkdir -p "${out}"/{core,bootstrap,controlplane,infrastructure}/crd
  local pair from to
  for pair in "${core}:core" "${capi}/bootstrap/kubeadm/config:bootstrap" "${capi}/controlplane/kubeadm/config:controlplane"; do
    from="${pair%:*}" to="${pair##*:}"
    cp "${from}"/crd/bases/*.yaml "${out}/${to}/crd/"
    cp "${from}"/webhook/manifests.yaml "${out}/${to}/webhooks.yaml"
  done
  cp "${capv}"/config/default/crd/bases/*.yaml "${out}/infrastructure/crd/"
  cp "${capv}"/config/govmomi/webhook/manifests.yaml "${out}/infrastructure/webhooks.yaml"
  chmod -R u+w "${out}"
}

# stamp PKG VERSION is the -ldflags that set a version package's fields,
# which the managers print at start and report (empty otherwise).
stamp() {
  local pkg="$1" version="$2" major minor
  major="${version#v}"; major="${major%%.*}"
  minor="${version#v*.}"; minor="${minor%%.*}"
  printf -- '-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean' \
    "${pkg}" "${version}" "${pkg}" "${major}" "${pkg}" "${minor}" "${pkg}"
}
