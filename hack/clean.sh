#!/usr/bin/env bash
# Removes build output and artifacts. The kube-apiserver and etcd built by
# hack/envtest.sh stay (they take minutes to build) unless CLEAN_ENVTEST=1.
source "$(dirname "$0")/lib.sh"
rm -rf bin/faultline _artifacts
if [[ "${CLEAN_ENVTEST:-}" == "1" ]]; then
  rm -rf bin
fi
