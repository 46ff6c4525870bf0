#!/usr/bin/env bash
# The scale measurement (not part of CI): 100 concurrent demo runs through
# one gateway (online against the fake platform, shared_registry on a test
# redis-server), then the same load through the agent over three gateways
# on the same Redis; throughput, peak RSS (VmHWM) of every process and the
# ratio of the two throughputs are in the test log. Sizes come from
# PRIME_SCALE_RUNS, PRIME_SCALE_STEPS and PRIME_SCALE_STEP_DELAY, e.g.
#   PRIME_SCALE_STEPS=300 bash scripts/scale.sh
# The test shares the soak test's probe helpers (built with either tag).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/agent.sh"

build_collector
build_demotrainer
build_agent
ensure_redis

log "scale measurement (built collector + agent + demo trainers + fake platform + redis-server)"
cd "$ROOT/e2e"
PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" PRIME_AGENT="$AGENT" \
  go test -tags scale -run Scale -count=1 -v -timeout 30m ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
