#!/usr/bin/env bash
# Runs the tests with -race; extra arguments go to `go test` (-short for
# unit tests only, -run TestIntegration for integration tests only).
source "$(dirname "$0")/lib.sh"
go test -race -count=1 -timeout 15m "$@" ./...
