#!/usr/bin/env bash
# README's test command. Two passes:
#  1. every package with -race; tests that start the Cluster API lab skip
#     themselves there, because upstream controllers race among themselves;
#  2. the lab's integration tests without -race, where they must run
#     (FAULTLINE_REQUIRE_LAB=1 turns missing kube-apiserver/etcd into a
#     failure). hack/envtest.sh builds those binaries.
# Extra arguments go to pass 1 (-short: unit tests only); with -short the
# lab pass is skipped.
source "$(dirname "$0")/lib.sh"
assets="$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 2>/dev/null | sort | tail -n 1 || true)"
if [[ -n "${assets}" && -z "${KUBEBUILDER_ASSETS:-}" ]]; then
  export KUBEBUILDER_ASSETS="${assets}"
fi
go test -race -count=1 -timeout 20m "$@" ./...
for a in "$@"; do
  [[ "${a}" == "-short" ]] && exit 0
done
FAULTLINE_REQUIRE_LAB=1 go test -count=1 -p 1 -timeout 45m -run 'TestIntegration' ./providers/lab/... ./cmd/faultline/ ./suites/examples/
