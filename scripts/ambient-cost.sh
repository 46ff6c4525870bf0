#!/usr/bin/env bash
# What ambient metrics (docs/system-metrics.md) add to a collector's CPU for
# one sampled run (not part of CI; docs/performance.md#system-metrics):
# three built collectors side by side for the same window, all on the demo
# config: bare (nothing more), debug (the three shipped overlays, host,
# GPUs from dcgm-exporter's recorded text, vLLM's, into the debug exporter)
# and prime (the overlays into the prime exporter, its run open). Prints CPU
# per sample of each, prime over debug (the exporter's own work) and over
# bare (all the overlays cost), and that as a share of a core at 15 s.
#
#   bash scripts/ambient-cost.sh                        # a 2-minute window, sampling every second
#   bash scripts/ambient-cost.sh -window 5m -interval 2s
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_collector
build_demotrainer
log "measuring (the window, plus ~15 s to start)"
(cd "$ROOT/bench" && go build -o "$BUILD/ambientcost" ./ambientcost)
"$BUILD/ambientcost" -collector "$OTELCOL" -trainer "$DEMOTRAINER" -root "$ROOT" -window 2m "$@"
