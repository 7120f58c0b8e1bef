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
out="bin/envtest/${kube_version}-linux-amd64"
stamp="${out}/.stamp"
want="kube-apiserver v${kube_version} etcd v${etcd_version}"

# A copy by version outside the checkout (the cache of faultline's heavy
# builds) serves a fresh clone of the same machine.
cached="$(faultline_cache)/envtest/${kube_version}-linux-amd64"
if [[ -x "${out}/kube-apiserver" && -x "${out}/etcd" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  echo "envtest binaries up to date in ${out} (${want})"
  exit 0
fi
if [[ -f "${cached}/.stamp" && "$(cat "${cached}/.stamp")" == "${want}" ]]; then
  mkdir -p "${out}"
  cp -a "${cached}/." "${out}/"
  echo "envtest binaries copied from ${cached} (${want})"
  exit 0
fi

echo "building ${want} from source into ${out}: the first time only, about 4 minutes"
echo "on 2 cores (the module proxy's downloads included); later runs reuse it"
work="$(pwd)/bin/.envtest-build"
rm -rf "${work}"
mkdir -p "${work}/apiserver" "${work}/etcd" "${out}"
abs_out="$(pwd)/${out}"

# kube-apiserver: hack/lib.sh's throw-away module over k8s.io/kubernetes.
echo "  kube-apiserver v${kube_version} (most of the time) ..."
go_tools_module "${work}/apiserver" "k8s.io/kubernetes@v${kube_version}" k8s.io/kubernetes/cmd/kube-apiserver
(
  cd "${work}/apiserver"
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$(kube_ldflags "${kube_version}")" \
    -o "${abs_out}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
)

# etcd: etcdmain.Main behind a two-line main package.
echo "  etcd v${etcd_version} ..."
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
rm -rf "${cached}.part"
mkdir -p "$(dirname "${cached}")"
cp -a "${out}" "${cached}.part" && rm -rf "${cached}" && mv "${cached}.part" "${cached}"
echo "built ${want} into ${out} (a copy in ${cached})"
