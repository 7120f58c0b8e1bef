#!/usr/bin/env bash
# Proves a suite runs scenarios side by side under ginkgo -p (make
# test-e2e PARALLEL=2): power-off-worker and delete-worker-vm each on a
# fresh cluster of one warm lab, at the same time, both passing, and each
# run's faults in its own cluster only (the namespaces its journal names).
source "$(dirname "$0")/lib.sh"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
fail() { echo "hack/e2e-parallel.sh: $*" >&2; tail -n 80 "${work}/out.log" >&2; exit 1; }
if ! ARTIFACTS="${work}/artifacts" SUITE=nightly PARALLEL=2 GINKGO_FOCUS='power-off-worker |delete-worker-vm ' \
  hack/test-e2e.sh > "${work}/out.log" 2>&1; then
  fail "the suite failed with PARALLEL=2"
fi
grep -q 'Running in parallel across .*2.* processes' "${work}/out.log" || fail "ginkgo did not run 2 processes"
grep -q "serving the lab's clusters to 2 Ginkgo processes" "${work}/out.log" || fail "the first process did not serve its lab's clusters"
namespaces=()
for sc in power-off-worker delete-worker-vm; do
  journal="${work}/artifacts/nightly/${sc}/journal.jsonl"
  [[ -s "${journal}" ]] || fail "${sc} journaled no fault (${journal})"
  mapfile -t seen < <(grep -o '"namespace":"[^"]*"' "${journal}" | sed 's/^"namespace":"\(.*\)"$/\1/' | sort -u)
  [[ "${#seen[@]}" == 1 ]] || fail "${sc}'s faults touched namespaces ${seen[*]}; want its own cluster's only"
  [[ "${seen[0]}" != default ]] || fail "${sc} ran on the lab's own cluster, not a leased one"
  namespaces+=("${seen[0]}")
  grep -q "lab: ${sc} leased cluster " "${work}/out.log" || fail "${sc} leased no cluster"
done
[[ "${namespaces[0]}" != "${namespaces[1]}" ]] || fail "both runs' faults went to ${namespaces[0]}"
grep 'leased cluster' "${work}/out.log" | sed 's/^ *//' | sort -u
echo "2 scenarios side by side, each in its own cluster: ${namespaces[*]}"
