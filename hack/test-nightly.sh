#!/usr/bin/env bash
# The nightly run (make test-nightly): README's test command with the
# heavy tiers' nightly part too (FAULTLINE_NIGHTLY=1: every kind scenario
# of the catalogue on the kind cluster, the catalogue's scenarios on the
# real-node tier), then the differential of the compiled stack over every
# lab scenario (hack/test-differential.sh) and the nightly suite on the
# real-node tier. make test (CI) runs each tier's representative part;
# internal/nightly says which test is which.
source "$(dirname "$0")/lib.sh"
export FAULTLINE_NIGHTLY=1
rc=0
# The real-node tier's second node image: cluster-api #14197 needs a
# Kubernetes before 1.31 (TestIntegrationRealNodeBug14197). Cached by
# version, like the default one.
hack/docker.sh >/dev/null && KUBE_VERSION=1.30.14 hack/kind-image.sh >/dev/null || rc=$?
hack/test.sh || rc=$?
hack/test-differential.sh || rc=$?
SUITE=nightly PROVIDER=lab NODES=containers hack/test-e2e.sh || rc=$?
exit "${rc}"
