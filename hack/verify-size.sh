#!/usr/bin/env bash
# Size limits of the code we write (tests and generated files excepted): no
# file over 400 lines, no function over 80 lines. An exception is listed
# below with its reason, and must be said in the closing note of the change
# that adds it.
source "$(dirname "$0")/lib.sh"
max_file=400
max_func=80
# FILE:FUNCTION (or FILE alone) that may exceed the limits, and why.
allowed='
'
bad=0
while IFS= read -r f; do
  n=$(wc -l <"${f}")
  if (( n > max_file )) && ! grep -qx "${f}" <<<"${allowed}"; then
    echo "${f}: ${n} lines, over ${max_file}" >&2
    bad=1
  fi
  while IFS=: read -r name len; do
    grep -qx "${f}:${name}" <<<"${allowed}" && continue
    echo "${f}: func ${name} is ${len} lines, over ${max_func}" >&2
    bad=1
  done < <(awk -v max="${max_func}" '
    /^func / { start = NR; name = $0; sub(/^func (\([^)]*\) )?/, "", name); sub(/[(\[].*/, "", name) }
    /^}/ && start { if (NR - start + 1 > max) print name ":" NR - start + 1; start = 0 }
  ' "${f}")
done < <(git ls-files '*.go' ':!:*_test.go' ':!:*zz_generated*')
exit "${bad}"
