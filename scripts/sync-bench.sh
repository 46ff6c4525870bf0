#!/usr/bin/env bash
# prime-sync's throughput next to the exporter's online path, on one run of
# 10,000 episodes of ~2 KB (e2e/syncbench_test.go). Not in CI: it measures.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
build_collector
build_demotrainer
build_sync
log "sync throughput (10,000 episodes of ~2 KB: online, then offline + prime-sync)"
(cd e2e && PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" PRIME_SYNC="$PRIMESYNC" \
  go test -tags syncbench -count=1 -run TestSyncThroughput -v -timeout 20m . 2>&1 | grep -v '^=== RUN')
