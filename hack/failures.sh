#!/usr/bin/env bash
# Prints what each failing test said, from logs of `go test` (with -v or
# without): for every test that ends in "--- FAIL", its last 40 lines of
# output. .ci/run ends
# with this, so that a failure's message is in the last lines of CI's
# output, wherever in a long log it was written. A failing test whose
# subtests failed is left to them.
# Usage: hack/failures.sh LOG...
set -o errexit -o nounset -o pipefail
awk -v keep=40 '
  match($0, /^=== (RUN|NAME|CONT|PAUSE) +/) { cur = substr($0, RLENGTH + 1); next }
  match($0, /^ *--- FAIL: /) {
    name = substr($0, RLENGTH + 1); sub(/ \([0-9.]+s\)$/, "", name)
    if (!(name in failed)) { order[++n] = name }
    failed[name] = 1; cur = name; next
  }
  /^ *--- (PASS|SKIP): / || /^(FAIL|ok|PASS)([ \t]|$)/ { cur = ""; next }
  cur != "" {
    i = ++count[cur]; lines[cur, i] = $0
    if (i > keep) { delete lines[cur, i - keep] }
  }
  END {
    for (k = 1; k <= n; k++) {
      name = order[k]; parent = 0
      for (other in failed) { if (index(other, name "/") == 1) { parent = 1 } }
      if (parent) { continue }
      print "=== failed: " name
      from = count[name] > keep ? count[name] - keep + 1 : 1
      for (i = from; i <= count[name]; i++) { print lines[name, i] }
    }
  }
' "$@"
