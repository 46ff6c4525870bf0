#!/usr/bin/env bash
# The soak test (not part of CI): many concurrent runs with episodes through
# the built collector on the production config, against the fake platform,
# sampling the collector's RSS and goroutines. Sizes come from PRIME_SOAK_*
# (see e2e/soak_setup_test.go), e.g.
#   PRIME_SOAK_RUNS=64 PRIME_SOAK_STEPS=1000 bash scripts/soak.sh
# The figures are in the test log and in _build/soak-report.txt, the
# collector's log in _build/soak-collector.log.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_collector
build_demotrainer

log "soak test (built collector + demo trainers + fake platform)"
cd "$ROOT/e2e"
PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" \
  PRIME_SOAK_REPORT="${PRIME_SOAK_REPORT:-$BUILD/soak-report.txt}" \
  PRIME_SOAK_LOG="${PRIME_SOAK_LOG:-$BUILD/soak-collector.log}" \
  go test -tags soak -run Soak -count=1 -v -timeout 60m ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
