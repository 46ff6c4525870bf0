#!/usr/bin/env bash
# The ten-minute platform outage (not part of CI; about 11 minutes): the
# built collector on the durable config of docs/operations.md with the
# default retry_on_failure, the fake platform answering 503 to every route
# for 10 minutes, the collector killed (kill -9) twice during it and started
# again on its storage; afterwards one run, every step's metrics and every
# episode exactly once, the run completed (e2e/longoutage_ten_test.go). CI
# runs the same scenario with a 5 m 45 s outage (e2e/longoutage_test.go).
# The control, expected to FAIL by losing data, sets exporterhelper's old
# default by hand:
#   PRIME_OUTAGE_MAX_ELAPSED=5m bash scripts/outage.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_collector
build_demotrainer

log "ten-minute outage test (built collector + demo trainer + fake platform)"
cd "$ROOT/e2e"
PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" \
  go test -tags outage -run TestATenMinutePlatformOutage -count=1 -v -timeout 30m ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
