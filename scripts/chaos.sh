#!/usr/bin/env bash
# The chaos tests (e2e/chaos_*test.go), all of them: the collector killed
# (kill -9) six times at seeded steps while the fake platform fails on every
# route (the one CI runs too), killed during finalize_grace, killed with its
# finalize held by the platform (before and after processing), and a gateway
# killed while its agent replays a backlog. Each asserts one run, every
# acknowledged value there, no sample row twice, the run completed. The seed
# is in the test log; PRIME_CHAOS_SEED=<seed> draws the same kills and
# faults again:
#   PRIME_CHAOS_SEED=42 bash scripts/chaos.sh
# Extra arguments go to go test, e.g. -run ChaosKill9OfAGateway or -count=5.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/agent.sh"

build_collector
build_demotrainer
build_agent
ensure_redis

log "chaos tests (built collector + agent + fake platform + redis-server)"
cd "$ROOT/e2e"
PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" PRIME_AGENT="$AGENT" \
  go test -tags chaos -run Chaos -count=1 -v -timeout 20m "$@" ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
