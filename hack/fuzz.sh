#!/usr/bin/env bash
# Fuzzes the scenario loader for FUZZTIME (default 60s).
source "$(dirname "$0")/lib.sh"
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime "${FUZZTIME:-60s}" ./framework/scenario
