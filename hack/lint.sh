#!/usr/bin/env bash
# gofmt and go vet.
source "$(dirname "$0")/lib.sh"
unformatted="$(gofmt -l .)"
if [[ -n "${unformatted}" ]]; then
  echo "not gofmt'ed:" >&2
  echo "${unformatted}" >&2
  exit 1
fi
go vet ./...
