#!/usr/bin/env bash
# Proves the nightly suite goes red when recovery regresses: it runs
# power-off-worker with a 1s budget for the MachineHealthCheck to act (the
# lab's takes 5 to 20s), expects the suite to fail, and its JUnit failure to
# name the phase and the budget.
source "$(dirname "$0")/lib.sh"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
sed 's/^parameters: {}$/parameters: {power-off-worker: {budget.unhealthy: 1s}}/' suites/config/lab.yaml > "${work}/lab.yaml"
grep -q 'budget.unhealthy: 1s' "${work}/lab.yaml" || { echo "hack/e2e-failing.sh: suites/config/lab.yaml no longer ends with 'parameters: {}'" >&2; exit 1; }
if E2E_CONFIG="${work}/lab.yaml" GINKGO_FOCUS='power-off-worker' ARTIFACTS="${work}/artifacts" SUITE=nightly hack/test-e2e.sh > "${work}/out.log" 2>&1; then
  echo "hack/e2e-failing.sh: the suite passed with a 1s budget; it must fail" >&2
  exit 1
fi
want='phase machine-unhealthy not reached within its budget 1s of inject'
if ! grep -q "${want}" "${work}/artifacts/junit.nightly.xml"; then
  echo "hack/e2e-failing.sh: junit.nightly.xml does not say '${want}':" >&2
  cat "${work}/artifacts/junit.nightly.xml" >&2 || tail -n 50 "${work}/out.log" >&2
  exit 1
fi
echo "the failing spec's JUnit failure: ${want}"
