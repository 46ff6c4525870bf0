#!/usr/bin/env bash
# prime-sync's benchmarks (e2e/syncbench_test.go). Not in CI: they measure.
#
#   scripts/sync-bench.sh [throughput|parallel]   (default: both)
#
# throughput: one run of 10,000 episodes of ~2 KB, online (trainer →
#   collector → platform) next to offline + prime-sync, on the loopback.
# parallel: a sweep of 16 offline runs of 5,000 episodes of ~2 KB synced
#   with --parallel-runs 1 and 4: wall time of each and the speed-up. The
#   fake platform holds every request 30 ms (a remote platform's round
#   trip, which the loopback lacks). PRIME_SYNC_BENCH_ROUNDS=N repeats the
#   pair N times (default 1); the speed-up is best against best.
#   PRIME_SYNC_BENCH_LATENCY=50ms (a Go duration; 0s: none) models another
#   round trip.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
which=${1:-all}
case "$which" in
  all) run='TestSyncThroughput|TestParallelRunsSyncSpeedUp' ;;
  throughput) run='TestSyncThroughput' ;;
  parallel) run='TestParallelRunsSyncSpeedUp' ;;
  *) echo "usage: $0 [throughput|parallel]" >&2; exit 2 ;;
esac
build_collector
build_demotrainer
build_sync
log "$(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
[ "$which" = parallel ] || log "sync throughput (10,000 episodes of ~2 KB: online, then offline + prime-sync)"
[ "$which" = throughput ] || log "parallel runs (16 runs × 5,000 episodes of ~2 KB, ${PRIME_SYNC_BENCH_LATENCY:-30ms} a platform request: --parallel-runs 1, then 4)"
(cd e2e && PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" PRIME_SYNC="$PRIMESYNC" \
  go test -tags syncbench -count=1 -run "^($run)\$" -v -timeout 30m . 2>&1 | grep -v '^=== RUN')
