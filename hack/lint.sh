#!/usr/bin/env bash
# gofmt and go vet.
source "$(dirname "$0")/lib.sh"
# bin/ holds throw-away modules of the build scripts, not ours.
unformatted="$(find . -name '*.go' -not -path './bin/*' -not -path './_artifacts/*' -print0 | xargs -0 gofmt -l)"
if [[ -n "${unformatted}" ]]; then
  echo "not gofmt'ed:" >&2
  echo "${unformatted}" >&2
  exit 1
fi
go vet ./...
