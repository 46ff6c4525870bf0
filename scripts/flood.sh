#!/usr/bin/env bash
# The flood measurement (not part of CI): the multi-tenant gateway's ingest
# limits against their Done-when, "one tenant sends at 10× its limit; the
# other tenants' throughput and p99 latency stay within 10 % of a run
# without the flood". The shipped gateway (deploy/multitenant/gateway.yaml,
# built collector, fake platform) serves other tenants at a steady load:
# alone; beside a flooding tenant (its override in PRIME_LIMITS_FILE)
# sending at its limit; while it attempts ten times its limit whatever it
# hears; while it floods through senders that honour Retry-After, as the
# OTel SDKs do; and once more blind with its limit lifted without a
# restart, to show what the limit holds off. It prints the others'
# throughput and p50/p99 latency in each phase and the ratios of the two
# floods to the first two phases (e2e/flood_test.go says how each is
# measured). Sizes come from PRIME_FLOOD_*, e.g.
#   PRIME_FLOOD_TENANTS=3 PRIME_FLOOD_RATE=5 PRIME_FLOOD_EPISODES=20 \
#   PRIME_FLOOD_TEXT_BYTES=2000 PRIME_FLOOD_SECONDS=30 PRIME_FLOOD_REPS=3 \
#   PRIME_FLOOD_LIMIT=100 PRIME_FLOOD_SDKS=8 bash scripts/flood.sh
# PRIME_FLOOD_UNLIMITED=0 leaves out the phase without a limit. The report
# is in the test log and in _build/flood-report.txt.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_collector
build_demotrainer

log "flood test (built collector + fake platform)"
cd "$ROOT/e2e"
PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" \
  PRIME_FLOOD_REPORT="${PRIME_FLOOD_REPORT:-$BUILD/flood-report.txt}" \
  go test -tags flood -run FloodOfOneTenant -count=1 -v -timeout 30m "$@" ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
