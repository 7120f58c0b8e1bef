#!/usr/bin/env bash
# Why kube-apiserver's memory in a lab of CLUSTERS clusters x 10 machines
# (default 20) differs from one start to the next: RUNS times (default 2),
# `faultline lab up` of that size, sampling kube-apiserver's RSS every
# second until every Machine is Running; then, from kube-apiserver itself
# (its /metrics and /debug/pprof, through the lab's management kubeconfig),
# its Go heap: live after a collection, in use, what the collector lets it
# grow to (next GC), and what the runtime holds but has not given back.
# Prints a row per run, and the heap profile's largest holders and the
# stored objects by resource of the last run. Upstream's flags are kept;
# nothing is changed in kube-apiserver, only read.
source "$(dirname "$0")/lib.sh"
runs="${RUNS:-2}" clusters="${CLUSTERS:-20}"
hack/envtest.sh >/dev/null
hack/build.sh >/dev/null
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 | sort | tail -n 1)}"
work="$(mktemp -d)"

# rss_of PID NAME: VmRSS (KiB) of PID's child process named NAME.
rss_of() {
  local p
  for p in $(pgrep -P "$1" 2>/dev/null); do
    if [[ "$(cat "/proc/${p}/comm" 2>/dev/null)" == "$2" ]]; then
      awk '/^VmRSS:/ {print $2}' "/proc/${p}/status" 2>/dev/null || true
      return
    fi
  done
}

# metric FILE NAME: the value of an unlabelled metric, in MiB.
metric() { awk -v n="$2" '$1 == n { printf "%.0f", $2 / 1048576 }' "$1"; }

printf '%-4s %9s %10s %10s %10s %10s %10s %10s %10s %8s\n' run running "peak RSS" "RSS up" "heap live" "heap inuse" "next GC" "idle held" "stacks+gc" objects
for ((i = 1; i <= runs; i++)); do
  log="${work}/lab-${i}.log"
  setsid bin/faultline lab up --clusters "${clusters}" --control-planes 3 --workers 7 --wait 20m >"${log}" 2>&1 &
  pid=$! peak=0
  while kill -0 "${pid}" 2>/dev/null && ! grep -q '^lab up in ' "${log}"; do
    r="$(rss_of "${pid}" kube-apiserver)"
    ((${r:-0} > peak)) && peak=${r}
    sleep 1 # sampling interval, not synchronisation
  done
  if ! grep -q '^lab up in ' "${log}"; then
    echo "run ${i}: the lab did not come up:" >&2
    tail -n 20 "${log}" >&2
    exit 1
  fi
  kubeconfig="$(sed -n 's/^management kubeconfig: \([^ ]*\) .*/\1/p' "${log}")"
  up="$(rss_of "${pid}" kube-apiserver)"
  kubectl --kubeconfig "${kubeconfig}" get --raw /metrics >"${work}/metrics-${i}.txt"
  # A heap profile's in-use figures are as of the last collection: live.
  kubectl --kubeconfig "${kubeconfig}" get --raw '/debug/pprof/heap' >"${work}/heap-${i}.pb.gz"
  kill -INT "${pid}"
  wait "${pid}" || true
  m="${work}/metrics-${i}.txt"
  live="$(go tool pprof -sample_index=inuse_space -top "${work}/heap-${i}.pb.gz" 2>/dev/null | sed -n 's/.*of \([0-9.]*\)\(MB\|GB\) total.*/\1 \2/p' | awk '{ printf "%.0f", $2 == "GB" ? $1 * 1024 : $1 }')"
  objects="$(awk '/^apiserver_storage_objects\{/ { s += $2 } END { print s + 0 }' "${m}")"
  other="$(awk '$1 == "go_memstats_stack_sys_bytes" || $1 == "go_memstats_gc_sys_bytes" || $1 == "go_memstats_mspan_sys_bytes" || $1 == "go_memstats_other_sys_bytes" { s += $2 } END { printf "%.0f", s / 1048576 }' "${m}")"
  idle="$(awk '$1 == "go_memstats_heap_idle_bytes" { i = $2 } $1 == "go_memstats_heap_released_bytes" { r = $2 } END { printf "%.0f", (i - r) / 1048576 }' "${m}")"
  printf '%-4s %9s %10s %10s %10s %10s %10s %10s %10s %8s\n' "${i}" "$(sed -n 's/^lab up in \([0-9.ms]*\) .*/\1/p' "${log}")" \
    "$((peak / 1024)) MiB" "$((${up:-0} / 1024)) MiB" "${live:-?} MiB" "$(metric "${m}" go_memstats_heap_inuse_bytes) MiB" \
    "$(metric "${m}" go_memstats_next_gc_bytes) MiB" "${idle} MiB" "${other} MiB" "${objects}"
done
echo
echo "run ${runs}: kube-apiserver's live heap by function (inuse_space, top 15):"
go tool pprof -sample_index=inuse_space -top "${work}/heap-${runs}.pb.gz" 2>/dev/null | sed -n '1,/flat%/d; p' | head -n 15
echo
echo "run ${runs}: stored objects by resource (apiserver_storage_objects, top 10):"
sed -n 's/^apiserver_storage_objects{resource="\([^"]*\)"} \([0-9.e+]*\)/\2 \1/p' "${work}/metrics-${runs}.txt" | sort -gr | head -n 10
echo "(metrics and heap profiles: ${work})"
