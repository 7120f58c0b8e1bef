#!/usr/bin/env bash
# Runs the benchmarks COUNT times (default 5) in one process each and prints
# the median ns/op of each, and ratios against the first one listed, so a
# noisy machine is compared within one run.
source "$(dirname "$0")/lib.sh"
count="${COUNT:-5}"
out="$(go test -run '^$' -bench . -benchmem -count "${count}" ./framework/...)"
echo "${out}"
echo
echo "${out}" | awk '/^Benchmark/ { name=$1; sub(/-[0-9]+$/, "", name); v[name] = v[name] " " $3; if (!(name in seen)) { seen[name]=1; order[n++]=name } }
END {
  for (i = 0; i < n; i++) {
    m = split(substr(v[order[i]], 2), a, " ")
    for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
    med[i] = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  printf "%-40s %14s %10s\n", "benchmark", "median ns/op", "ratio"
  for (i = 0; i < n; i++) printf "%-40s %14.0f %9.2fx\n", order[i], med[i], med[i] / med[0]
}'
echo
hack/bench-lab.sh
