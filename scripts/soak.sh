#!/usr/bin/env bash
# The soak test (not part of CI): many concurrent runs with episodes through
# the built collector on the production config, against the fake platform,
# sampling the collector's RSS and goroutines. Sizes come from PRIME_SOAK_*
# (see e2e/soak_setup_test.go), e.g.
#   PRIME_SOAK_RUNS=64 PRIME_SOAK_STEPS=1000 bash scripts/soak.sh
# One long run of 1,000,000 episodes of ~2 KB at a steady rate, with the
# collector's RSS and live heap after GC at 10 %, 50 % and 100 % of the rows
# landed (PRIME_SOAK_DISCARD=1: the fake keeps row counts, not object bytes):
#   PRIME_SOAK_RUNS=1 PRIME_SOAK_CONCURRENCY=1 PRIME_SOAK_STEPS=10000 \
#   PRIME_SOAK_EPISODES_PER_STEP=100 PRIME_SOAK_EPISODE_TEXT_BYTES=600 \
#   PRIME_SOAK_STEP_INTERVAL=1 PRIME_SOAK_STEP_DELAY=40ms PRIME_SOAK_DISCARD=1 \
#   PRIME_SOAK_CHECKPOINTS=10,50 bash scripts/soak.sh
# (about 9 minutes; docs/performance.md, Over a million episodes, has its figures).
# Each part's CPU per episode is read alone, against its trainer process's
# (a peer doing fixed work per episode, so the machine's pace cancels) and on
# a line fitted through the load; the collector's bytes allocated per episode
# are counted, and bound to grow at most PRIME_SOAK_MAX_WORK_GROWTH_PCT (5).
# The figures are in the test log and in _build/soak-report.txt, the
# collector's log in _build/soak-collector.log, the heap profiles of the
# start (heap-000), the checkpoints and the end (heap-100) in
# _build/soak-heap/ (go tool pprof -top -diff_base
# _build/soak-heap/heap-000.pb.gz _build/soak-heap/heap-100.pb.gz).
# PRIME_SOAK_TIMEOUT (default 60m) bounds the whole test.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_collector
build_demotrainer

log "soak test (built collector + demo trainers + fake platform)"
cd "$ROOT/e2e"
rm -rf "${PRIME_SOAK_HEAP_DIR:-$BUILD/soak-heap}"
PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" \
  PRIME_SOAK_REPORT="${PRIME_SOAK_REPORT:-$BUILD/soak-report.txt}" \
  PRIME_SOAK_LOG="${PRIME_SOAK_LOG:-$BUILD/soak-collector.log}" \
  PRIME_SOAK_HEAP_DIR="${PRIME_SOAK_HEAP_DIR:-$BUILD/soak-heap}" \
  go test -tags soak -run Soak -count=1 -v -timeout "${PRIME_SOAK_TIMEOUT:-60m}" ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
