#!/usr/bin/env bash
# The lab catalogue through `run --on-cluster` (one Indexed Job on a kind
# cluster of this machine, PARALLEL pods at a time, each with a lab of its
# own) against local `run --parallel PARALLEL` (one warm lab, a cluster
# per scenario) of the same scenarios (those a pod runs: it skips real
# nodes and other releases' managers), in one bench run: wall time, CPU
# seconds (faultline's process tree here; for the Job, the kind node
# container's cgroup as well) and the verdicts. hack/bench-lab.sh runs it.
#
#   PARALLEL    pods (and local scenarios) at a time (default 4)
#   SELECTOR    the scenarios (default the lab catalogue: provider!=kind)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench-lib.sh"
parallel="${PARALLEL:-4}"
selector="${SELECTOR:-provider!=kind}"
[[ -x bin/faultline ]] || hack/build.sh >/dev/null
if ! docker info >/dev/null 2>&1; then
  echo "bench --on-cluster: no Docker engine (hack/docker.sh starts one); skipped" >&2
  exit 0
fi

# node_cpu NAME: CPU seconds the kind node container NAME has used.
node_cpu() {
  local id dir
  id="$(docker inspect --format '{{.Id}}' "$1")"
  for dir in "/sys/fs/cgroup/cpuacct/docker/${id}" "/sys/fs/cgroup/system.slice/docker-${id}.scope"; do
    if [[ -f "${dir}/cpuacct.usage" ]]; then awk '{ printf "%.0f", $1 / 1e9 }' "${dir}/cpuacct.usage"; return; fi
    if [[ -f "${dir}/cpu.stat" ]]; then awk '$1 == "usage_usec" { printf "%.0f", $2 / 1e6 }' "${dir}/cpu.stat"; return; fi
  done
  echo "?"
}

verdicts() { grep -E 'scenarios passed' "$1" || echo "no summary (see $1)"; }

work="$(mktemp -d)"
name="fl-bench-jobs"
cleanup() { bin/faultline kind down "${name}" >/dev/null 2>&1 || true; }
trap cleanup EXIT
bin/faultline kind up --name "${name}" --control-planes 1 --workers 0 >"${work}/kind-up.log" 2>&1 ||
  { echo "bench --on-cluster: kind up failed (${work}/kind-up.log)" >&2; exit 1; }
kubeconfig="$(sed -n 's/^KUBECONFIG=//p' "${work}/kind-up.log")"
node="${name}-control-plane"
image="$(hack/image.sh 2>/dev/null | tail -n 1)"
docker save "${image}" | docker exec -i "${node}" ctr --namespace=k8s.io images import - >/dev/null
docker cp deploy/runs "${node}:/faultline-runs"
docker exec "${node}" kubectl --kubeconfig /etc/kubernetes/admin.conf apply -k /faultline-runs >/dev/null

before="$(node_cpu "${node}")"
cpu_run "${work}/jobs.log" bin/faultline run -l "${selector}" --on-cluster "kind-${name}" --kubeconfig "${kubeconfig}" \
  --parallel "${parallel}" --image "${image}" --artifacts "${work}/jobs"
jobs_s="${wall_s}" jobs_cpu="${cpu_s}"
after="$(node_cpu "${node}")"
pods_cpu="$(awk -v a="${after}" -v b="${before}" 'BEGIN { if (a == "?" || b == "?") print "?"; else print a - b }')"
# The same scenarios here: those the Job ran (its summary's lines that
# are not SKIPPED).
mapfile -t ran < <(sed -n 's/^  \(PASS\|FAIL\|ERROR\|TIMED-OUT\|INTERRUPTED\) *\([^ ]*\) (.*/\2/p' "${work}/jobs.log")
((${#ran[@]} > 0)) || { echo "bench --on-cluster: the Job ran nothing (${work}/jobs.log)" >&2; exit 1; }
cpu_run "${work}/local.log" bin/faultline run "${ran[@]}" --parallel "${parallel}" --artifacts "${work}/local"
echo
printf '%-44s %8s %18s %s\n' "lab catalogue (${selector}), ${parallel} at a time" "wall s" "CPU s (here+pods)" verdicts
printf '%-44s %8s %18s %s\n' "local --parallel ${parallel} (one warm lab)" "${wall_s}" "${cpu_s}" "$(verdicts "${work}/local.log")"
printf '%-44s %8s %18s %s\n' "--on-cluster kind, ${parallel} pods (a lab each)" "${jobs_s}" "${jobs_cpu}+${pods_cpu}" "$(verdicts "${work}/jobs.log")"
awk -v j="${jobs_s}" -v l="${wall_s}" 'BEGIN { if (l > 0) printf "--on-cluster / local: %.2fx wall time, %d scenarios\n", j / l, '"${#ran[@]}"' }'
