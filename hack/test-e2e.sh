#!/usr/bin/env bash
# Runs a Ginkgo suite (make test-e2e). Settings, all optional:
#   PROVIDER            lab (default), kind or vsphere
#   SUITE               nightly (default), preupgrade or incidents
#   RELEASE             the Cluster API and CAPV stack the lab runs (E2E_RELEASE;
#                       'faultline lab releases' lists them; default the
#                       compiled one); all runs the suite once per stack,
#                       each into ARTIFACTS/release-NAME
#   UPGRADE_TO          with SUITE=preupgrade: the release to upgrade to
#                       (E2E_UPGRADE_TO): the upgrade gate runs the
#                       preupgrade scenarios on RELEASE and on UPGRADE_TO,
#                       the upgrade scenarios from one to the other, and
#                       fails on a regression in the scorecard of the two
#                       (ARTIFACTS/preupgrade/scorecard); UPGRADE_RUNS
#                       (E2E_UPGRADE_RUNS, default 1) runs per side
#   NODES               the lab's nodes: simulated (default) or containers
#                       (the real-node tier: kind node containers booted
#                       by real kubeadm; needs docker, hack/docker.sh, and
#                       the node image, hack/kind-image.sh)
#   E2E_CONFIG          the e2e config (default suites/config/$PROVIDER.yaml;
#                       with PROVIDER=lab and NODES=containers,
#                       suites/config/lab-containers.yaml, which raises
#                       the budgets a physical join needs)
#   PARALLEL            with PROVIDER=lab: N scenarios side by side (ginkgo
#                       -p --procs N), each on a fresh cluster of one warm
#                       lab; those a leased cluster cannot serve run after
#                       them, one at a time (suites/e2e/parallel.go)
#   GINKGO_LABEL_FILTER e.g. 'tier:core && !seed-003'
#   GINKGO_FOCUS        a regular expression over spec names
#   FLAKE_ATTEMPTS      runs a failing spec up to this many times in all;
#                       Ginkgo marks one that passes on a later attempt
#                       [FLAKEY TEST - TOOK N ATTEMPTS TO PASS]
#   ARTIFACTS           where junit.<suite>.xml and each scenario's run
#                       folder go (default _artifacts)
# The lab needs kube-apiserver and etcd: hack/envtest.sh builds them.
source "$(dirname "$0")/lib.sh"
export PROVIDER="${PROVIDER:-lab}"
suite="${SUITE:-nightly}"
config="suites/config/${PROVIDER}.yaml"
[[ "${PROVIDER}" == lab && "${NODES:-}" == containers ]] && config="suites/config/lab-containers.yaml"
export E2E_CONFIG="$(realpath "${E2E_CONFIG:-${config}}")"
export ARTIFACTS="$(realpath -m "${ARTIFACTS:-_artifacts}")"
export FAULTLINE_E2E=1
assets="$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 2>/dev/null | sort | tail -n 1 || true)"
if [[ -n "${assets}" && -z "${KUBEBUILDER_ASSETS:-}" ]]; then
  export KUBEBUILDER_ASSETS="${assets}"
fi
[[ -d "suites/${suite}" ]] || { echo "SUITE=${suite}: expected nightly, preupgrade or incidents" >&2; exit 2; }
mkdir -p "${ARTIFACTS}"
args=(-ginkgo.v -ginkgo.junit-report="${ARTIFACTS}/junit.${suite}.xml")
[[ -n "${GINKGO_LABEL_FILTER:-}" ]] && args+=(-ginkgo.label-filter="${GINKGO_LABEL_FILTER}")
[[ -n "${GINKGO_FOCUS:-}" ]] && args+=(-ginkgo.focus="${GINKGO_FOCUS}")
if [[ -n "${FLAKE_ATTEMPTS:-}" ]]; then
  [[ "${FLAKE_ATTEMPTS}" =~ ^[1-9][0-9]*$ ]] || { echo "FLAKE_ATTEMPTS=${FLAKE_ATTEMPTS}: expected a number of attempts, 1 or more" >&2; exit 2; }
  args+=(-ginkgo.flake-attempts="${FLAKE_ATTEMPTS}")
fi
if [[ "${RELEASE:-}" == all ]]; then
  # The stacks, as 'faultline lab releases -o json' names them.
  stacks="$(go run ./cmd/faultline lab releases -o json | sed -n 's/^    "name": "\(.*\)",$/\1/p')"
  rc=0
  for stack in ${stacks}; do
    echo "=== ${suite} suite on release ${stack}"
    mkdir -p "${ARTIFACTS}/release-${stack}"
    ARTIFACTS="${ARTIFACTS}/release-${stack}" E2E_RELEASE="${stack}" go test -v -count=1 -timeout 3h "./suites/${suite}" -args -ginkgo.v \
      -ginkgo.junit-report="${ARTIFACTS}/release-${stack}/junit.${suite}.xml" "${args[@]:2}" || rc=$?
  done
  exit "${rc}"
fi
if [[ -n "${PARALLEL:-}" ]]; then
  [[ "${PARALLEL}" =~ ^[1-9][0-9]*$ ]] || { echo "PARALLEL=${PARALLEL}: expected a number of scenarios at once, 1 or more" >&2; exit 2; }
  [[ "${PROVIDER}" == lab ]] || { echo "PARALLEL=${PARALLEL}: runs side by side need PROVIDER=lab (on one shared cluster each spec's faults would be the others' failures)" >&2; exit 2; }
  [[ "${RELEASE:-}" != all ]] || { echo "PARALLEL with RELEASE=all: run one release at a time" >&2; exit 2; }
fi
[[ -n "${RELEASE:-}" ]] && export E2E_RELEASE="${RELEASE}"
[[ -n "${UPGRADE_TO:-}" ]] && export E2E_UPGRADE_TO="${UPGRADE_TO}"
[[ -n "${UPGRADE_RUNS:-}" ]] && export E2E_UPGRADE_RUNS="${UPGRADE_RUNS}"
if [[ -n "${PARALLEL:-}" ]]; then
  # Ginkgo's own CLI runs the processes; its flags are the same without
  # the -ginkgo. prefix.
  exec go run github.com/onsi/ginkgo/v2/ginkgo --procs "${PARALLEL}" --timeout 3h "${args[@]/#-ginkgo./--}" "./suites/${suite}"
fi
go test -v -count=1 -timeout 3h "./suites/${suite}" -args "${args[@]}"
