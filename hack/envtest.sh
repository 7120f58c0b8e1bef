#!/usr/bin/env bash
# Builds the management cluster's kube-apiserver and etcd from source through
# the Go module proxy (no prebuilt binary can be downloaded here) into
# bin/envtest/<k8s-version>-linux-amd64/, the layout setup-envtest uses, so
# KUBEBUILDER_ASSETS can point at it. A stamp file keys the cache by version:
# a second run with the same versions does nothing.
#
#   KUBE_VERSION  kube-apiserver version (default 1.35.4, matching k8s.io v0.35)
#   ETCD_VERSION  etcd version (default 3.6.16)
source "$(dirname "$0")/lib.sh"

kube_version="${KUBE_VERSION:-1.35.4}"
etcd_version="${ETCD_VERSION:-3.6.16}"
staging_version="0.${kube_version#*.}"
out="bin/envtest/${kube_version}-linux-amd64"
stamp="${out}/.stamp"
want="kube-apiserver v${kube_version} etcd v${etcd_version}"

if [[ -x "${out}/kube-apiserver" && -x "${out}/etcd" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  echo "envtest binaries up to date in ${out} (${want})"
  exit 0
fi

work="$(pwd)/bin/.envtest-build"
rm -rf "${work}"
mkdir -p "${work}/apiserver" "${work}/etcd" "${out}"
abs_out="$(pwd)/${out}"

# kube-apiserver: a throw-away module that requires k8s.io/kubernetes and
# replaces each staging module (./staging/src/k8s.io/X in kubernetes' own
# go.mod) with its published v0.X release.
(
  cd "${work}/apiserver"
  cat >go.mod <<EOF
module faultline.dev/envtest-apiserver

go 1.25

require k8s.io/kubernetes v${kube_version}
EOF
  kube_mod="$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v${kube_version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  if [[ -z "${kube_mod}" || ! -f "${kube_mod}" ]]; then
    echo "envtest: could not download k8s.io/kubernetes@v${kube_version}'s go.mod through the module proxy" >&2
    exit 1
  fi
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9.-]*\) => ./staging/.*#\1#p' "${kube_mod}" | while read -r mod; do
    echo "replace ${mod} => ${mod} v${staging_version}" >>go.mod
  done
  cat >tools.go <<'EOF'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
EOF
  GOFLAGS=-mod=mod go mod tidy >/dev/null
  pkg=k8s.io/component-base/version
  minor="${kube_version#*.}"; minor="${minor%%.*}"
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X ${pkg}.gitVersion=v${kube_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}" \
    -o "${abs_out}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
)

# etcd: etcdmain.Main behind a two-line main package.
(
  cd "${work}/etcd"
  cat >go.mod <<EOF
module faultline.dev/envtest-etcd

go 1.25

require go.etcd.io/etcd/server/v3 v${etcd_version}
EOF
  cat >main.go <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  GOFLAGS=-mod=mod go mod tidy >/dev/null
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${abs_out}/etcd" .
)

rm -rf "${work}"
echo "${want}" >"${stamp}"
echo "built ${want} into ${out}"
