# Sourced by hack/bench-lab.sh (its helpers: runs, median, seconds).
#
# 1. `faultline run power-off-worker --lab NAME` against a `lab up` that
#    keeps 2 clusters ready: a first run sent as soon as `faultline lab
#    wait NAME` returns, printed beside the median of the RUNS runs after
#    it (it should take no longer), then those RUNS runs, whole process each, sorted by CAPV's path (the replacement
#    Running within 10 s of the injection: the fast path; else its 10 s IP
#    requeue) and how long the lease waited for a cluster. Runs are
#    BENCH_SERVED_GAP seconds apart (default 30): a person's time between
#    two tries of a scenario, in which the lab gives the last cluster back
#    and stocks its pool again; 0 runs them back to back, when a run
#    waits for the pool and shares the CPU with its refill.
# 2. The lab catalogue through one `run --parallel 4` on one warm lab,
#    beside the one-after-the-other figure of the same bench run, whose
#    history it reads to start the longest scenarios first.
# 3. Concurrency: CONCURRENCY (default "1 5 20") power-off-worker runs at
#    once on one warm lab (--parallel C), each on its own cluster; the
#    median of their replacement-running phases, and its ratio to one run
#    alone; the medians of their detection, remediation and replacement
#    phases; and the controllers whose work queues kept items waiting
#    longest meanwhile (each run's queues.json: the median over the runs
#    of each controller's mean wait, and of its reconciles' seconds per
#    second of the run: how many of its workers were busy). BENCH_SERVED_RUNS=0 skips 1
#    (default RUNS).

busiest_queues() { # busiest_queues DIR...: the 3 controllers with the longest median mean wait
  python3 - "$@" <<'PY'
import datetime, json, os, statistics, sys
def when(s):
    return datetime.datetime.fromisoformat(s[:26].rstrip("Z") if "." in s else s.rstrip("Z"))
waits, adds, busy = {}, {}, {}
for d in sys.argv[1:]:
    p = os.path.join(d, "queues.json")
    if not os.path.exists(p):
        continue
    r = json.load(open(os.path.join(d, "result.json")))
    window = (when(r["finishedAt"]) - when(r["startedAt"])).total_seconds() or 1
    for q in json.load(open(p)):
        c = q["controller"]
        waits.setdefault(c, []).append(q["meanWaitSeconds"])
        adds.setdefault(c, []).append(q["adds"])
        busy.setdefault(c, []).append(q["workSeconds"] / window)
top = sorted(waits, key=lambda c: -statistics.median(waits[c]))[:3]
print(", ".join("%s %.2f s (%d adds, %.1f workers busy)" % (c, statistics.median(waits[c]), statistics.median(adds[c]), statistics.median(busy[c])) for c in top) or "no queues.json")
PY
}

phase_medians() { # phase_medians DIR...: each power-off-worker phase's median seconds after inject, with how many reached it
  python3 - "$@" <<'PY'
import json, os, statistics, sys
names = ["node-not-ready", "machine-unhealthy", "machine-deleted", "vm-destroyed", "replacement-running"]
seen = {n: [] for n in names}
for d in sys.argv[1:]:
    p = os.path.join(d, "result.json")
    if not os.path.exists(p):
        continue
    for ph in json.load(open(p))["phases"]:
        if ph["name"] in seen and ph.get("ok") and ph.get("sinceInjectSeconds") is not None:
            seen[ph["name"]].append(ph["sinceInjectSeconds"])
print(", ".join("%s %s (%d)" % (n, "%.2f s" % statistics.median(seen[n]) if seen[n] else "-", len(seen[n])) for n in names))
PY
}

replacement_s() { # replacement_s DIR: replacement-running's seconds after inject, from result.json
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.2f" % next(p["sinceInjectSeconds"] for p in r["phases"] if p["name"]=="replacement-running"))' "$1/result.json" 2>/dev/null || echo ""
}

if [[ "${BENCH_SERVED_RUNS:-${runs}}" != 0 ]]; then
echo
printf '%-30s %4s %12s %14s %12s %s\n' "run --lab" run "lease s" "replacement s" "process s" verdict
up_log="$(mktemp)"
setsid bin/faultline lab up >"${up_log}" 2>&1 &
up_pid=$!
until grep -q '^Ctrl-C' "${up_log}" || ! kill -0 "${up_pid}" 2>/dev/null; do
  sleep 1 # polling the log for the lab's readiness line
done
lab_name="$(sed -n 's/.*--lab \(faultline-lab-[0-9]*\).*/\1/p' "${up_log}" | head -n 1)"
# The first run is sent as soon as `lab wait` returns (its pool stocked),
# as a CI step that starts a lab does: it should take no longer than the
# next ones.
began="$(date +%s.%N)"
bin/faultline lab wait "${lab_name}" >/dev/null 2>&1 || echo "faultline lab wait ${lab_name} failed: the first run below waits for the pool"
echo "lab wait: returned $(awk -v a="${began}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after lab up printed the lab's name"
fast=() slow=() next=()
for i in $(seq 0 "${runs}"); do
  dir="$(mktemp -d)" log="$(mktemp)"
  began="$(date +%s.%N)"
  bin/faultline run power-off-worker --lab "${lab_name}" --artifacts "${dir}" >"${log}" 2>&1 || true
  proc="$(awk -v a="${began}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
  lease="$(sed -n 's/^lab: .* leased cluster .* Running in \([0-9.ms]*\)$/\1/p' "${log}" | seconds)"
  repl="$(replacement_s "${dir}")"
  verdict="$(sed -n 's/^scenario .*: \([A-Z]*\) in .*/\1/p' "${log}")"
  label="counted"
  ((i == 0)) && label="first, right after lab wait" first="${proc}"
  printf '%-30s %4d %12s %14s %12s %s\n' "${label}" "${i}" "${lease:-?}" "${repl:-?}" "${proc}" "${verdict:-see ${log}}"
  if ((i < runs)); then
    sleep "${BENCH_SERVED_GAP:-30}" # a person's time between tries (see above), not synchronisation
  fi
  ((i == 0)) && continue
  next+=("${proc}")
  if [[ -n "${repl}" ]] && awk -v r="${repl}" 'BEGIN { exit !(r < 10) }'; then fast+=("${proc}"); else slow+=("${proc}"); fi
done
kill -INT "${up_pid}" 2>/dev/null || true
wait "${up_pid}" || true
((${#fast[@]} > 0)) && served_fast="$(printf '%s\n' "${fast[@]}" | median)"
((${#slow[@]} > 0)) && served_slow="$(printf '%s\n' "${slow[@]}" | median)"
((${#next[@]} > 0)) && echo "run --lab: the first, right after lab wait: ${first} s; the next ${#next[@]}: median $(printf '%s\n' "${next[@]}" | median) s"
echo "run --lab: ${#fast[@]} run(s) on CAPV's fast path, ${#slow[@]} with its 10 s requeue; runs ${BENCH_SERVED_GAP:-30} s apart"
fi

if [[ "${BENCH_CATALOGUE:-1}" != 0 ]]; then
  # The history of the run one after the other: the longest start first.
  cpu_run /tmp/faultline-bench-parallel.log bin/faultline run -l 'provider!=kind' --parallel 4 --history "${catalogue_history}" --artifacts "$(mktemp -d)"
  parallel_catalogue="${wall_s}"
  echo "lab catalogue --parallel 4: ${parallel_catalogue} s, $(cpu_share) ($(grep -E 'scenarios passed' /tmp/faultline-bench-parallel.log || echo 'no summary')); one after the other: ${sequential_catalogue:-?} s"
fi

echo
printf '%-30s %16s %10s %s\n' "concurrent power-off-worker" "replacement s" ratio "verdicts"
alone_repl=""
for c in ${CONCURRENCY:-1 5 20}; do
  dir="$(mktemp -d)"
  args=()
  for _ in $(seq 1 "${c}"); do args+=(power-off-worker); done
  if ((c > 1)); then args+=(--parallel "${c}"); fi
  bin/faultline run "${args[@]}" --artifacts "${dir}" --setup-timeout 20m >"${dir}.log" 2>&1 || true
  if ((c == 1)); then
    repl="$(replacement_s "${dir}")" alone_repl="$(replacement_s "${dir}")"
  else
    repl="$(for d in "${dir}"/power-off-worker*/; do replacement_s "${d}"; done | { grep . || true; } | median)"
  fi
  ratio="$(awk -v r="${repl}" -v a="${alone_repl}" 'BEGIN { if (r == "" || a == "") print "-"; else printf "%.2fx", r / a }')"
  passed="$(grep -cE '^---  PASS' "${dir}.log" || true)"
  ((c == 1)) && passed="$(grep -cE '^scenario .*: PASS in' "${dir}.log" || true)"
  reached="$(for d in "${dir}"/power-off-worker*/; do replacement_s "${d}"; done | grep -c . || true)"
  ((c == 1)) && reached="$(replacement_s "${dir}" | grep -c . || true)"
  printf '%-30s %16s %10s %s\n' "${c} at once" "${repl:-?}" "${ratio}" "${passed} passed of ${c}, ${reached} reached replacement-running"
  if ((c == 1)); then queues="$(busiest_queues "${dir}")"; else queues="$(busiest_queues "${dir}"/power-off-worker*/)"; fi
  # Detection (node-not-ready, machine-unhealthy), remediation
  # (machine-deleted, vm-destroyed) and replacement, each after inject.
  if ((c == 1)); then phases="$(phase_medians "${dir}")"; else phases="$(phase_medians "${dir}"/power-off-worker*/)"; fi
  printf '%-30s %s\n' "" "phases after inject (median, runs that reached it): ${phases}"
  printf '%-30s %s\n' "" "longest queue waits: ${queues}"
  if ((c == 20)); then
    concurrent_ratio="$(awk -v r="${repl}" -v a="${alone_repl}" 'BEGIN { if (r != "" && a != "") printf "%.2f", r / a }')"
  fi
done
