#!/usr/bin/env bash
# Runs once more the tests that a `go test` log says failed, and passes if
# they all pass then, saying which were flaky. hack/test.sh uses it for
# every pass: the tests wait on real servers and clusters, on a loaded
# machine (CI runs the nightly suite beside them). A test that fails twice
# fails the pass; one that fails once is named in a "=== flaky:" line, its
# first failure left above it.
#   - a failed subtest is run again alone with its parent (-run
#     '^Parent$/^sub$'); a test that failed by itself, whole;
#   - a package that failed with no failing test named (it did not build,
#     it panicked, it timed out), or in which the race detector found a
#     data race, is not run again: the script fails.
# Usage: hack/rerun-failed.sh LOG GO_TEST_COMMAND...
#   GO_TEST_COMMAND is the command that wrote LOG, without -run and
#   without packages (e.g. go test -count=1 -timeout 45m).
source "$(dirname "$0")/lib.sh"
log="$1"
shift
# One line per test to run again: PACKAGE TAB TEST TAB SUBTEST|SUBTEST...,
# or "-" TAB PACKAGE for a package that cannot be run again.
plan="$(awk '
  /^--- FAIL: / { top[++n] = $3; next }
  /^    --- FAIL: / && split($3, p, "/") == 2 { subs[p[1]] = subs[p[1]] (subs[p[1]] == "" ? "" : "|") p[2]; next }
  /^panic: / || /^WARNING: DATA RACE/ { broken = 1 }
  /^FAIL\t/ {
    if (n == 0 || broken || $3 == "[build" || $3 == "[setup") { print "-\t" $2 }
    else { for (i = 1; i <= n; i++) { print $2 "\t" top[i] "\t" subs[top[i]] } }
    n = 0; broken = 0; delete subs; next
  }
  /^ok  \t/ { n = 0; broken = 0; delete subs }
' "${log}")"
if [[ -z "${plan}" ]]; then
  echo "hack/rerun-failed.sh: ${log} names no failed package" >&2
  exit 1
fi
if grep -q $'^-\t' <<<"${plan}"; then
  echo "hack/rerun-failed.sh: not run again, failed before or outside a test: $(awk -F'\t' '$1 == "-" { print $2 }' <<<"${plan}" | tr '\n' ' ')" >&2
  exit 1
fi
quote() { sed 's/[][\.*^$+?(){}]/\\&/g' <<<"$1"; }
rc=0
while IFS=$'\t' read -r pkg test subs; do
  run="^$(quote "${test}")\$"
  [[ -n "${subs}" ]] && run="${run}/^($(quote "${subs}"))\$"
  echo "=== running again: ${pkg} -run '${run}'"
  if "$@" -run "${run}" "${pkg}"; then
    echo "=== flaky: ${pkg} ${test}${subs:+ (${subs})}: failed, then passed when run again; its first failure is above"
  else
    rc=1
  fi
done <<<"${plan}"
exit "${rc}"
