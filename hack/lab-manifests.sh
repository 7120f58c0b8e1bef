#!/usr/bin/env bash
# Copies the CRDs and webhook configurations of Cluster API (core, CABPK,
# KCP) and CAPV (govmomi mode) from the module cache into
# providers/lab/management/manifests/, where they are embedded into the faultline
# binary: an installed binary then needs no module cache. The versions are
# the ones go.mod requires; VERSIONS records them and hack/verify.sh checks
# that it still matches go.mod.
source "$(dirname "$0")/lib.sh"

capi_version="$(go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
capv_version="$(go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api-provider-vsphere)"
capi="$(go mod download -json "sigs.k8s.io/cluster-api@${capi_version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
capv="$(go mod download -json "sigs.k8s.io/cluster-api-provider-vsphere@${capv_version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"

out=providers/lab/management/manifests
rm -rf "${out}"
copy_manifests "${capi}" "${capv}" "${out}"

printf 'sigs.k8s.io/cluster-api %s\nsigs.k8s.io/cluster-api-provider-vsphere %s\n' "${capi_version}" "${capv_version}" >"${out}/VERSIONS"
echo "copied manifests of cluster-api ${capi_version} and cluster-api-provider-vsphere ${capv_version} into ${out}"
