#!/usr/bin/env bash
# README's test command. Three passes:
#  1. every package with -race; tests that start the Cluster API lab skip
#     themselves there, because upstream controllers race among themselves,
#     and the kind tests wait for pass 2;
#  2. the lab's integration tests without -race, where they must run
#     (and vSphere's guest operations test, whose vcsim races in -race),
#     (FAULTLINE_REQUIRE_LAB=1 turns missing kube-apiserver/etcd into a
#     failure; hack/envtest.sh builds those binaries), and beside them the
#     kind integration tests, which wait on real clusters' timers far more
#     than they compute. They need a Docker engine and the node image
#     (hack/docker.sh, hack/kind-image.sh) and skip, saying why, without
#     them (FAULTLINE_REQUIRE_KIND=1 makes that a failure).
#  3. the lab's real-node tier (TestIntegrationRealNode*), once the kind
#     cluster is gone, still beside the lab's tests.
# Of the heavy tiers (kind, real nodes, other releases) a representative
# part runs here; FAULTLINE_NIGHTLY=1 (make test-nightly) runs all of them.
# A test that fails is run once more alone (hack/rerun-failed.sh): one that
# passes then is named in a "=== flaky:" line and does not fail the run;
# its first failure stays in the output. A data race is not run again.
# Extra arguments go to pass 1 (-short: unit tests only); with -short passes
# 2 and 3 are skipped.
source "$(dirname "$0")/lib.sh"
# A developer's running lab ('faultline lab up') must not take the tests'
# runs that name no provider.
export FAULTLINE_NO_SERVED_LAB=1
assets="$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 2>/dev/null | sort | tail -n 1 || true)"
if [[ -n "${assets}" && -z "${KUBEBUILDER_ASSETS:-}" ]]; then
  export KUBEBUILDER_ASSETS="${assets}"
fi
unit_log="$(mktemp)"
unit_test=(go test -race -count=1 -timeout 20m -skip '^TestIntegrationKind$' "$@")
"${unit_test[@]}" ./... 2>&1 | tee "${unit_log}" || hack/rerun-failed.sh "${unit_log}" "${unit_test[@]}"
rm -f "${unit_log}"
for a in "$@"; do
  [[ "${a}" == "-short" ]] && exit 0
done
# Passes 2's kind tests and 3 run one after the other in the background,
# beside the lab's tests (two sets of real nodes at once on two cores
# would make both late); their output is printed once the lab's are done.
kind_test=(go test -count=1 -timeout 45m -v)
real_test=(env FAULTLINE_REQUIRE_LAB=1 go test -count=1 -p 1 -timeout 40m -v)
real_nodes() {
  local kind_log real_log kind=0 real=0
  kind_log="$(mktemp)" real_log="$(mktemp)"
  "${kind_test[@]}" -run '^TestIntegrationKind$' ./providers/kind/ >"${kind_log}" 2>&1 || kind=$?
  echo "=== kind integration tests (go test -v -run TestIntegrationKind ./providers/kind/)"
  cat "${kind_log}"
  if [[ "${kind}" != 0 ]]; then
    kind=0
    hack/rerun-failed.sh "${kind_log}" "${kind_test[@]}" || kind=$?
  fi
  # 3. The lab's real-node tier: clusters of kind node containers under
  #    the real Cluster API, once the kind cluster is gone: a lab of 1
  #    control plane and 1 worker, and mhc-range-short-circuit on both
  #    tiers (TestIntegrationRealNodeShortCircuit); make test-nightly runs
  #    the catalogue's scenarios there too (TestIntegrationRealNodeScenarios)
  #    and the nightly suite the rest (make test-e2e NODES=containers).
  echo "=== the lab's real-node tier (go test -v -run TestIntegrationRealNode ./providers/lab/)"
  "${real_test[@]}" -run 'TestIntegrationRealNode' ./providers/lab/ 2>&1 | grep -v 'TLS handshake error' >"${real_log}" || real=$?
  cat "${real_log}"
  if [[ "${real}" != 0 ]]; then
    real=0
    hack/rerun-failed.sh "${real_log}" "${real_test[@]}" || real=$?
  fi
  rm -f "${kind_log}" "${real_log}"
  [[ "${kind}" == 0 && "${real}" == 0 ]]
}
nodes_log="$(mktemp)"
real_nodes >"${nodes_log}" 2>&1 &
nodes_pid=$!
lab=0
lab_log="$(mktemp)"
lab_test=(env FAULTLINE_REQUIRE_LAB=1 go test -count=1 -p 1 -timeout 45m -skip 'TestIntegrationRealNode')
"${lab_test[@]}" -run 'TestIntegration' ./providers/lab/... ./providers/capi/... ./cmd/faultline/ ./suites/examples/ 2>&1 | tee "${lab_log}" ||
  hack/rerun-failed.sh "${lab_log}" "${lab_test[@]}" || lab=$?
# vcsim's container-backed VMs race in govmomi's own code: the guest
# operations test skips itself under -race and runs here.
go test -count=1 -timeout 10m -run '^TestIntegrationGuestOperations$' ./providers/vsphere/ || lab=$?
# A team's own suite in its own module (suites/examples/team): its
# scenario file through faultline's Ginkgo suite, catalogue left out.
(cd suites/examples/team && FAULTLINE_E2E=1 E2E_CONFIG="$(pwd)/e2e.yaml" go test -count=1 -timeout 15m ./...) || lab=$?
nodes=0
wait "${nodes_pid}" || nodes=$?
cat "${nodes_log}"
rm -f "${nodes_log}" "${lab_log}"
[[ "${lab}" == 0 && "${nodes}" == 0 ]]
