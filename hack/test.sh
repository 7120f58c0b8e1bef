#!/usr/bin/env bash
# README's test command. Two passes:
#  1. every package with -race; tests that start the Cluster API lab skip
#     themselves there, because upstream controllers race among themselves,
#     and the kind tests wait for pass 2;
#  2. the lab's integration tests without -race, where they must run
#     (FAULTLINE_REQUIRE_LAB=1 turns missing kube-apiserver/etcd into a
#     failure; hack/envtest.sh builds those binaries), and beside them the
#     kind integration tests, which wait on real clusters' timers far more
#     than they compute. They need a Docker engine and the node image
#     (hack/docker.sh, hack/kind-image.sh) and skip, saying why, without
#     them (FAULTLINE_REQUIRE_KIND=1 makes that a failure).
# Extra arguments go to pass 1 (-short: unit tests only); with -short pass 2
# is skipped.
source "$(dirname "$0")/lib.sh"
assets="$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 2>/dev/null | sort | tail -n 1 || true)"
if [[ -n "${assets}" && -z "${KUBEBUILDER_ASSETS:-}" ]]; then
  export KUBEBUILDER_ASSETS="${assets}"
fi
go test -race -count=1 -timeout 20m -skip '^TestIntegrationKind$' "$@" ./...
for a in "$@"; do
  [[ "${a}" == "-short" ]] && exit 0
done
kind_log="$(mktemp)"
go test -count=1 -timeout 45m -v -run '^TestIntegrationKind$' ./providers/kind/ >"${kind_log}" 2>&1 &
kind_pid=$!
lab=0
FAULTLINE_REQUIRE_LAB=1 go test -count=1 -p 1 -timeout 45m -run 'TestIntegration' ./providers/lab/... ./cmd/faultline/ ./suites/examples/ || lab=$?
kind=0
wait "${kind_pid}" || kind=$?
echo "=== kind integration tests (go test -v -run TestIntegrationKind ./providers/kind/)"
cat "${kind_log}"
rm -f "${kind_log}"
[[ "${lab}" == 0 && "${kind}" == 0 ]]
