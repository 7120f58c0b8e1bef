#!/usr/bin/env bash
# The scorecard along the chain a fleet walks (make scorecard-chain, a
# nightly job; docs/upgrades.md, "Along the chain"): every lab scenario of the catalogue that names no release
# of its own runs RUNS times on each stack of STACKS, into
# ARTIFACTS/<stack>, and each consecutive pair of stacks is compared with
# faultline compare into ARTIFACTS/<base>-to-<target>. Each side runs
# once and serves both of its pairs. The default stacks all run as their
# release's own manager binaries, so that a flag is a release's change and
# not the in-process stack's (docs/upgrades.md, "Along the chain").
# STACKS="v1.11 v1.12 v1.13-processes v1.14" RUNS=4 PARALLEL=2
# SCENARIOS="a b" ARTIFACTS=_artifacts/chain. A pair's regressions do not
# stop the chain; the exit code is 1 when any pair has one.
source "$(dirname "$0")/lib.sh"
assets="$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 2>/dev/null | sort | tail -n 1 || true)"
if [[ -n "${assets}" && -z "${KUBEBUILDER_ASSETS:-}" ]]; then
  export KUBEBUILDER_ASSETS="${assets}"
fi
export FAULTLINE_NO_SERVED_LAB=1
stacks=(${STACKS:-v1.11 v1.12 v1.13-processes v1.14})
runs="${RUNS:-4}"
out="${ARTIFACTS:-_artifacts/chain}"
fl="$(mktemp -d)/faultline"
trap 'rm -rf "$(dirname "${fl}")"' EXIT
go build -o "${fl}" ./cmd/faultline

# The catalogue's lab scenarios that name no release: those pinned to one
# (an upgrade from v1.11, say) are each their own chain.
if [[ -z "${SCENARIOS:-}" ]]; then
  SCENARIOS=""
  for name in $("${fl}" list -o json | jq -r '.[].name | select(startswith("kind-") | not)'); do
    if [[ "$("${fl}" describe "${name}" -o json | jq -r '.spec.lab.release // ""')" == "" ]]; then
      SCENARIOS+="${name} "
    fi
  done
fi
names=()
for _ in $(seq "${runs}"); do
  names+=(${SCENARIOS})
done
echo "chain: ${stacks[*]}; ${runs} runs of: ${SCENARIOS}"

mkdir -p "${out}"
status=0
for stack in "${stacks[@]}"; do
  "${fl}" lab releases --build "${stack}" >/dev/null
  if [[ ! -d "${out}/${stack}" ]]; then
    # A failed scenario is a result: the side's exit code is not the chain's.
    "${fl}" run --release "${stack}" --parallel "${PARALLEL:-2}" --artifacts "${out}/${stack}.partial" \
      "${names[@]}" >"${out}/${stack}.log" 2>&1 || true
    mv "${out}/${stack}.partial" "${out}/${stack}"
  fi
done
for ((i = 1; i < ${#stacks[@]}; i++)); do
  base="${stacks[i - 1]}" target="${stacks[i]}"
  echo "== ${base} -> ${target}"
  "${fl}" compare "${out}/${base}" "${out}/${target}" --out "${out}/${base}-to-${target}" || status=$?
done
exit "${status}"
