#!/usr/bin/env bash
# The compare page's scale measurement (not part of CI; e2e/compare_scale_test.go,
# build tag comparescale): 20 synthetic offline runs of 10,000 steps and 500
# metrics (about 2.3 GB of metrics.jsonl), compared by the built prime-sync,
# the page opened in headless chromium. The test log gives the time to read
# the runs, the page's size and its time to ready; the test asserts only what
# the page shows, never a speed. Sizes come from PRIME_COMPARE_SCALE_RUNS,
# PRIME_COMPARE_SCALE_STEPS and PRIME_COMPARE_SCALE_METRICS, e.g.
#   PRIME_COMPARE_SCALE_RUNS=5 bash scripts/compare-scale.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_chromium
build_sync
log "$(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
log "compare scale: ${PRIME_COMPARE_SCALE_RUNS:-20} runs × ${PRIME_COMPARE_SCALE_STEPS:-10000} steps × ${PRIME_COMPARE_SCALE_METRICS:-500} metrics"
cd "$ROOT/e2e"
PRIME_SYNC="$PRIMESYNC" go test -tags comparescale -run 'TestAComparisonOf20RunsOf10000StepsAnd500MetricsOpensInChromium' \
  -count=1 -v -timeout 30m . 2>&1 | grep -v '^=== RUN'
