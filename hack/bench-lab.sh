#!/usr/bin/env bash
# Measures the embedded lab on this machine: for each scenario, RUNS times
# (default 3), one at a time, `faultline run` from a cold lab. Prints per
# run and as medians: lab start to all Machines Running, the scenario's own
# wall time, and peak RSS of faultline + kube-apiserver + etcd (sampled
# every 200 ms from /proc).
source "$(dirname "$0")/lib.sh"
runs="${RUNS:-3}"
hack/envtest.sh >/dev/null
hack/build.sh >/dev/null
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 | sort | tail -n 1)}"

rss_tree() { # rss_tree PID: summed VmRSS (KiB) of PID and its descendants
  local total=0 p v
  for p in $1 $(pgrep -P "$1" 2>/dev/null); do
    v="$(awk '/^VmRSS:/ {print $2}' "/proc/${p}/status" 2>/dev/null || true)"
    total=$((total + ${v:-0}))
  done
  echo "${total}"
}

# seconds 1m5.3s -> 65.3 (Go duration strings)
seconds() { awk '{ s = 0; d = $0; if (d ~ /m/) { split(d, a, "m"); s = a[1] * 60; d = a[2] } sub(/s$/, "", d); print s + d }'; }

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

printf '%-18s %4s %14s %14s %14s %s\n' scenario run "lab start s" "scenario s" "peak RSS MiB" verdict
for scenario in power-off-worker delete-cp-vm; do
  starts=() walls=() peaks=()
  for i in $(seq 1 "${runs}"); do
    log="$(mktemp)"
    setsid bin/faultline run "${scenario}" --artifacts "$(mktemp -d)" >"${log}" 2>&1 &
    pid=$!
    peak=0
    while kill -0 "${pid}" 2>/dev/null; do
      r="$(rss_tree "${pid}")"
      ((r > peak)) && peak=${r}
      sleep 0.2 # sampling interval, not synchronisation
    done
    wait "${pid}" || true
    start="$(sed -n 's/^lab: all Machines Running in \([0-9.ms]*\)$/\1/p' "${log}" | seconds)"
    wall="$(sed -n 's/^scenario .*: [A-Z]* in \([0-9.ms]*\)$/\1/p' "${log}" | seconds)"
    verdict="$(sed -n 's/^scenario .*: \([A-Z]*\) in .*/\1/p' "${log}")"
    printf '%-18s %4d %14s %14s %14d %s\n' "${scenario}" "${i}" "${start:-?}" "${wall:-?}" $((peak / 1024)) "${verdict:-see ${log}}"
    starts+=("${start:-0}") walls+=("${wall:-0}") peaks+=($((peak / 1024)))
  done
  printf '%-18s %4s %14s %14s %14s\n' "${scenario}" median \
    "$(printf '%s\n' "${starts[@]}" | median)" "$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${peaks[@]}" | median)"
done
echo "targets: lab start <= 15 s; power-off-worker <= 30 s; peak RSS <= 1536 MiB"
