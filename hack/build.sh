#!/usr/bin/env bash
# Builds bin/faultline with the version from git.
source "$(dirname "$0")/lib.sh"
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
go build -ldflags "-X main.version=${version}" -o bin/faultline ./cmd/faultline
echo "bin/faultline ${version}"
