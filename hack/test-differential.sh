#!/usr/bin/env bash
# The differential of the compiled stack (make test-differential): every
# lab scenario of the catalogue that runs on any stack, once on v1.13 in
# faultline's process and once on v1.13-processes (the same release's
# own manager binaries, built on first use into the cache of built
# releases), compared with faultline compare (cmd/faultline,
# TestIntegrationDifferential). It fails on a verdict that differs or a
# phase beyond the tolerance that no listed difference explains, naming
# the scenario and the phase. make test runs its CI part (two
# scenarios); this is the nightly's. FAULTLINE_DIFFERENTIAL=a,b names
# scenarios instead; ARTIFACTS keeps both sides' runs and the scorecard.
source "$(dirname "$0")/lib.sh"
assets="$(ls -d "$(pwd)"/bin/envtest/*-linux-amd64 2>/dev/null | sort | tail -n 1 || true)"
if [[ -n "${assets}" && -z "${KUBEBUILDER_ASSETS:-}" ]]; then
  export KUBEBUILDER_ASSETS="${assets}"
fi
export FAULTLINE_NO_SERVED_LAB=1 FAULTLINE_REQUIRE_LAB=1
export FAULTLINE_DIFFERENTIAL="${FAULTLINE_DIFFERENTIAL:-all}"
go run ./cmd/faultline lab releases --build v1.13-processes
go test -count=1 -timeout 90m -v -run '^TestIntegrationDifferential$' ./cmd/faultline/
