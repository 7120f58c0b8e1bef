#!/usr/bin/env bash
# Measures the embedded lab on this machine: for each scenario, RUNS times
# (default 3), one at a time, `faultline run` from a cold lab (BENCH_SCENARIOS,
# default power-off-worker and delete-cp-vm). Prints per
# run and as medians: lab start to all Machines Running, the scenario's own
# wall time, the whole process's, and peak RSS of faultline +
# kube-apiserver + etcd (+ a stack's managers; sampled every 200 ms from
# /proc). The same for power-off-worker on every other Cluster API + CAPV
# stack (BENCH_RELEASES=0 skips it), and power-off-worker with every
# management plane started fresh (FAULTLINE_STATE=off) beside the stored
# state's. Then the goals
# of issue 17 with their ratios: those two, every lab scenario of the
# catalogue through one `run` (one warm lab, a fresh cluster per scenario;
# BENCH_CATALOGUE=0 skips it; its history, kept in a folder of the bench's
# own, lets the run with --parallel start the longest first) and a lab of
# 20 clusters x 10 machines (BENCH_SCALE=0 skips it), with the CPU seconds
# faultline, kube-apiserver and etcd used until it was Running (what bounds
# it on a small machine), and per Machine; BENCH_SCALE_50=1 reports 50 x 10 first.
# Then the same catalogue through `run --on-cluster` on a kind cluster of
# this machine (hack/bench-jobs.sh; BENCH_JOBS=0 skips it).
#
# Then the real-node tier (REAL_RUNS times, default 1; 0 skips it; needs
# docker and the node image): bring-up to all Machines Running of 1 control
# plane + 1 worker (faultline lab up) and of 3 + 2 (power-off-worker's
# cluster), power-off-worker's wall time on it, and the peak memory of
# faultline and every node container (cgroup usage less inactive file
# cache, as docker stats counts it, sampled every second).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench-lib.sh"
runs="${RUNS:-3}"
hack/envtest.sh >/dev/null
hack/build.sh >/dev/null
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 | sort | tail -n 1)}"

cpu_tree() { # cpu_tree PID: CPU seconds (user + system) so far of PID and its children, by name
  local p tck
  tck="$(getconf CLK_TCK)"
  for p in $1 $(pgrep -P "$1" 2>/dev/null); do
    awk -v t="${tck}" -v name="$(cat "/proc/${p}/comm" 2>/dev/null)" '{ printf "%s %.0f s, ", name, ($14 + $15) / t }' "/proc/${p}/stat" 2>/dev/null || true
  done
}

rss_tree() { # rss_tree PID: summed VmRSS (KiB) of PID and its descendants
  local total=0 p v
  for p in $1 $(pgrep -P "$1" 2>/dev/null); do
    v="$(awk '/^VmRSS:/ {print $2}' "/proc/${p}/status" 2>/dev/null || true)"
    total=$((total + ${v:-0}))
  done
  echo "${total}"
}

cpu_share() { # cpu_share: "CPU N s of C cores x W s (P%)" for cpu_s and wall_s
  awk -v c="${cpu_s}" -v n="$(nproc)" -v w="${wall_s}" 'BEGIN { printf "CPU %d s of %d cores x %d s (%.0f%%)", c, n, w, (w > 0 ? 100 * c / (n * w) : 0) }'
}

# seconds 1m5.3s -> 65.3 (Go duration strings)
seconds() { awk '{ s = 0; d = $0; if (d ~ /m/) { split(d, a, "m"); s = a[1] * 60; d = a[2] } sub(/s$/, "", d); print s + d }'; }

# median: of the numbers on stdin; nothing for none (not 0, which would
# read as a figure and meet any goal).
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# run_once LABEL RUN ARGS...: one `faultline run ARGS...` from a cold lab;
# prints its row and sets start, wall, proc and peak (MiB).
run_once() {
  local label="$1" i="$2" log began pid r verdict
  shift 2
  log="$(mktemp)"
  began="$(date +%s.%N)"
  setsid bin/faultline run "$@" --artifacts "$(mktemp -d)" >"${log}" 2>&1 &
  pid=$!
  peak=0
  while kill -0 "${pid}" 2>/dev/null; do
    r="$(rss_tree "${pid}")"
    ((r > peak)) && peak=${r}
    sleep 0.2 # sampling interval, not synchronisation
  done
  wait "${pid}" || true
  peak=$((peak / 1024))
  proc="$(awk -v a="${began}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
  start="$(sed -n 's/^lab: all Machines Running in \([0-9.ms]*\)$/\1/p' "${log}" | seconds)"
  wall="$(sed -n 's/^scenario .*: [A-Z]* in \([0-9.ms]*\)$/\1/p' "${log}" | seconds)"
  verdict="$(sed -n 's/^scenario .*: \([A-Z]*\) in .*/\1/p' "${log}")"
  printf '%-24s %4d %14s %14s %14s %14d %s\n' "${label}" "${i}" "${start:-?}" "${wall:-?}" "${proc}" "${peak}" "${verdict:-see ${log}}"
  start="${start:-0}" wall="${wall:-0}"
}

# runs LABEL ARGS...: RUNS of run_once, then their medians; sets
# med_start and med_proc.
runs() {
  local label="$1" starts=() walls=() peaks=() procs=()
  shift
  for i in $(seq 1 "${runs}"); do
    run_once "${label}" "${i}" "$@"
    starts+=("${start}") walls+=("${wall}") peaks+=("${peak}") procs+=("${proc}")
  done
  med_start="$(printf '%s\n' "${starts[@]}" | median)" med_proc="$(printf '%s\n' "${procs[@]}" | median)"
  printf '%-24s %4s %14s %14s %14s %14s\n' "${label}" median \
    "${med_start}" "$(printf '%s\n' "${walls[@]}" | median)" "${med_proc}" "$(printf '%s\n' "${peaks[@]}" | median)"
}

printf '%-24s %4s %14s %14s %14s %14s %s\n' scenario run "lab start s" "scenario s" "process s" "peak RSS MiB" verdict
# RUNS=0 skips the simulated tier (to measure the real-node tier alone).
read -r -a scenarios <<<"${BENCH_SCENARIOS:-power-off-worker delete-cp-vm}"
((runs > 0)) || scenarios=()
for scenario in "${scenarios[@]}"; do
  runs "${scenario}" "${scenario}"
  [[ "${scenario}" == power-off-worker ]] || continue
  goal_start="${med_start}" goal_proc="${med_proc}"
done
# The same with every management plane started fresh, not from the stored
# state (docs/lab.md): what the stored state saves, in one run.
if ((runs > 0)); then
  (export FAULTLINE_STATE=off && runs "power-off-worker, fresh" power-off-worker)
fi

# Per Cluster API + CAPV stack (faultline lab releases): lab start and
# power-off-worker, each stack's managers as processes but the compiled
# one's (the row above; v1.13-processes is the same release as its own
# binaries, so the two ways of running controllers compare in one run).
# A stack not built is built first, outside the measure. BENCH_RELEASES=0
# skips it.
if ((runs > 0)) && [[ "${BENCH_RELEASES:-1}" != 0 ]]; then
  echo
  printf '%-24s %4s %14s %14s %14s %14s %s\n' "power-off-worker on" run "lab start s" "scenario s" "process s" "peak RSS MiB" verdict
  # Every stack but the default (the first), from lab releases -o json:
  # the table's notes below it are not stacks.
  for stack in $(bin/faultline lab releases -o json | sed -n 's/^    "name": "\(.*\)",$/\1/p' | tail -n +2); do
    bin/faultline lab releases --build "${stack}" >/dev/null
    runs "release ${stack}" power-off-worker --release "${stack}"
  done
fi

# The goals of issue 17 ("Fast and visible"), each against its figure.
goal() { # goal NAME VALUE GOAL UNIT
  awk -v n="$1" -v v="$2" -v g="$3" -v u="$4" 'BEGIN { if (v == "") printf "%-58s %10s %8s %8s\n", n, "-", g u, "-"; else printf "%-58s %10s %8s %7.2fx %s\n", n, v u, g u, v / g, (v <= g ? "met" : "missed") }'
}
catalogue="" scale_s="" scale_mib="" catalogue_history="$(mktemp -d)"
if ((runs > 0)) && [[ "${BENCH_CATALOGUE:-1}" != 0 ]]; then
  # Every lab scenario of the catalogue, one after another, one command.
  cpu_run /tmp/faultline-bench-catalogue.log bin/faultline run -l 'provider!=kind' --history "${catalogue_history}" --artifacts "$(mktemp -d)"
  catalogue="${wall_s}"
  echo "lab catalogue one after the other: ${catalogue} s, $(cpu_share); $(grep -E 'scenarios passed' /tmp/faultline-bench-catalogue.log || echo 'no summary')"
fi
# scale_lab CLUSTERS WAIT: a lab of CLUSTERS clusters of 3 control planes
# and 7 workers; sets scale_s (until Running), scale_mib (peak RSS) and
# scale_cpu (CPU seconds per Machine until Running). The workers have no
# MachineHealthCheck (--no-worker-mhc): this measures what bringing
# Machines up costs, and on two cores most workers wait in CAPV's
# VSphereVM queue longer than the compressed profile's 2-minute
# nodeStartupTimeout, so a health check remediates them and the lab never
# comes up (docs/lab.md).
scale_lab() {
  local clusters="$1" wait="$2" log pid peak=0 cpu="" r
  log="$(mktemp)"
  setsid bin/faultline lab up --clusters "${clusters}" --control-planes 3 --workers 7 --no-worker-mhc --wait "${wait}" >"${log}" 2>&1 &
  pid=$!
  while kill -0 "${pid}" 2>/dev/null; do
    r="$(rss_tree "${pid}")"
    ((r > peak)) && peak=${r}
    if [[ -z "${cpu}" ]] && grep -q '^lab up in ' "${log}"; then
      cpu="$(cpu_tree "${pid}")"
      kill -INT "${pid}"
    fi
    sleep 1 # sampling interval, not synchronisation
  done
  wait "${pid}" || true
  scale_s="$(sed -n 's/^lab up in \([0-9.ms]*\) .*/\1/p' "${log}" | seconds)"
  scale_mib=$((peak / 1024)) scale_cpu=""
  # What bounds it: the CPU each process used until Running, against
  # what the machine's cores could give in that time.
  if [[ -n "${cpu}" ]]; then
    scale_cpu="$(awk -v c="${cpu}" -v m="$((clusters * 10))" 'BEGIN { n = split(c, f, /[^0-9]+/); for (i = 1; i <= n; i++) t += f[i]; printf "%.2f", t / m }')"
    echo "${clusters} clusters x 10 machines: CPU until Running: ${cpu}of $(nproc) cores x ${scale_s} s = $(awk -v n="$(nproc)" -v s="${scale_s}" 'BEGIN { printf "%.0f", n * s }') s; ${scale_cpu} CPU-s per Machine" >&2
  fi
  if [[ -z "${scale_s}" ]]; then
    # Its memory up to then is no figure for a lab that is up.
    echo "${clusters} clusters x 10 machines: not Running within ${wait} ($(grep -o 'lab not ready: .\{0,160\}' "${log}" | head -n 1 || true)...; log ${log}); peak RSS until then ${scale_mib} MiB" >&2
    scale_mib="" scale_cpu=""
  fi
}
scale_cpu=""
if ((runs > 0)) && [[ "${BENCH_SCALE_50:-0}" != 0 ]]; then
  # Reported, with no goal: 50 clusters x 10 machines (BENCH_SCALE_50=1).
  scale_lab 50 40m
  echo "50 clusters x 10 machines: Running in ${scale_s:-?} s, peak RSS ${scale_mib:-?} MiB, ${scale_cpu:-?} CPU-s per Machine" >&2
  scale_s="" scale_mib="" scale_cpu=""
fi
if ((runs > 0)) && [[ "${BENCH_SCALE:-1}" != 0 ]]; then
  scale_lab 20 15m
fi
# Issue 34: a running lab serving runs, scenarios side by side, and how
# remediation times grow with concurrent runs. BENCH_SERVED=0 skips it.
served_fast="" served_slow="" parallel_catalogue="" sequential_catalogue="${catalogue}"
if ((runs > 0)) && [[ "${BENCH_SERVED:-1}" != 0 ]]; then
  source "$(dirname "$0")/bench-served.sh"
fi
# Issue 51: the same catalogue as one Indexed Job on a kind cluster of
# this machine, against local --parallel 4 of the same scenarios. BENCH_JOBS=0 skips it.
if ((runs > 0)) && [[ "${BENCH_JOBS:-1}" != 0 && "${BENCH_CATALOGUE:-1}" != 0 ]]; then
  PARALLEL=4 hack/bench-jobs.sh || echo "bench --on-cluster failed" >&2
fi
echo
printf '%-58s %10s %8s %8s\n' "goal (medians of ${runs})" value goal ratio
goal "lab start to 3 control planes + 2 workers Running" "${goal_start:-}" 10 s
goal "faultline run power-off-worker, start to exit" "${goal_proc:-}" 25 s
goal "every lab scenario of the catalogue, one run command" "${catalogue}" 300 s
goal "20 clusters x 10 machines Running (workers without MHC)" "${scale_s}" 90 s
goal "20 clusters x 10 machines, peak RSS (faultline+apiserver+etcd)" "${scale_mib}" 3072 " MiB"
goal "20 clusters x 10 machines, CPU-s per Machine until Running" "${scale_cpu}" 1.5 " CPU-s"
goal "run power-off-worker --lab, whole process (CAPV fast path)" "${served_fast}" 12 s
goal "run power-off-worker --lab, whole process (CAPV 10 s requeue)" "${served_slow}" 12 s
goal "lab catalogue, --parallel 4 on one warm lab" "${parallel_catalogue}" 240 s
goal "replacement-running, 20 concurrent runs against 2x alone" "${concurrent_ratio:-}" 2 x

real_runs="${REAL_RUNS:-1}"
((real_runs > 0)) || exit 0
if ! docker info >/dev/null 2>&1; then
  echo "real-node tier: no Docker engine (hack/docker.sh starts one); skipped" >&2
  exit 0
fi

containers_mib() { # the lab containers' memory now (MiB), as docker stats counts it
  local total=0 id dir usage inactive
  for id in $(docker ps -q --no-trunc --filter label=faultline.dev/lab); do
    for dir in "/sys/fs/cgroup/memory/docker/${id}" "/sys/fs/cgroup/system.slice/docker-${id}.scope"; do
      [[ -d "${dir}" ]] || continue
      if [[ -f "${dir}/memory.usage_in_bytes" ]]; then
        usage="$(cat "${dir}/memory.usage_in_bytes")"
        inactive="$(awk '$1 == "total_inactive_file" {print $2}' "${dir}/memory.stat")"
      else
        usage="$(cat "${dir}/memory.current")"
        inactive="$(awk '$1 == "inactive_file" {print $2}' "${dir}/memory.stat")"
      fi
      total=$((total + usage - ${inactive:-0}))
    done
  done
  echo $((total / 1048576))
}

# measure LOG CMD...: runs CMD in its own session, sampling the peak of
# faultline's RSS plus the containers' memory until it exits or, for lab
# up, until the lab is up (then it is interrupted).
measure() {
  local log="$1"; shift
  setsid "$@" >"${log}" 2>&1 &
  local pid=$! peak=0 m
  while kill -0 "${pid}" 2>/dev/null; do
    m=$(( $(rss_tree "${pid}") / 1024 + $(containers_mib) ))
    ((m > peak)) && peak=${m}
    if [[ "$1" == bin/faultline && "$2" == lab ]] && grep -q '^lab up in ' "${log}"; then
      kill -INT "${pid}"
    fi
    sleep 1 # sampling interval, not synchronisation
  done
  wait "${pid}" || true
  echo "${peak}"
}

echo
printf '%-30s %4s %14s %14s %14s %s\n' "real nodes" run "bring-up s" "scenario s" "peak MiB" verdict
for i in $(seq 1 "${real_runs}"); do
  log="$(mktemp)"
  peak="$(measure "${log}" bin/faultline lab up --nodes containers --control-planes 1 --workers 1)"
  start="$(sed -n 's/^lab up in \([0-9.ms]*\) .*/\1/p' "${log}" | seconds)"
  printf '%-30s %4d %14s %14s %14d %s\n' "lab up 1 CP + 1 worker" "${i}" "${start:-?}" - "${peak}" "$([[ -n "${start}" ]] && echo up || echo "see ${log}")"
  log="$(mktemp)"
  peak="$(measure "${log}" bin/faultline run power-off-worker --nodes containers --artifacts "$(mktemp -d)")"
  start="$(sed -n 's/^lab: all Machines Running in \([0-9.ms]*\)$/\1/p' "${log}" | seconds)"
  wall="$(sed -n 's/^scenario .*: [A-Z]* in \([0-9.ms]*\)$/\1/p' "${log}" | seconds)"
  verdict="$(sed -n 's/^scenario .*: \([A-Z]*\) in .*/\1/p' "${log}")"
  printf '%-30s %4d %14s %14s %14d %s\n' "power-off-worker 3 CP + 2 w" "${i}" "${start:-?}" "${wall:-?}" "${peak}" "${verdict:-see ${log}}"
done
