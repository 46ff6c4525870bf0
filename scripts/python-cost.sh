#!/usr/bin/env bash
# What prime_otel costs a trainer, with the real OpenTelemetry Python SDK 1.44.0
# (python/bench/cost.py): CPU per episode on all threads and the calling
# thread's time, as ratios to json.dumps of the same episode, for a 2 KB chat
# episode and one with about 150 KiB of token ids and logprobs; and the
# calling thread's time per log_metrics call with 20 keys. One table: each
# shape's median of 5 interleaved runs beside issue 45's target, pass or
# fail (exit status 1 when a median misses). It sends to the collector
# stand-in scripts/otlp_recorder.py. Not in CI (it needs the SDK).
#
#   bash scripts/python-cost.sh [--episodes N] [--calls N] [--runs N] [--json]
#   PRIME_OTEL_SRC=/tmp/before/python/src bash scripts/python-cost.sh   # another tree's package, same bench
#
# The SDK is assembled by scripts/pysdk.sh (see its header).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/scripts/pysdk.sh"

out=$(mktemp -d)
portfile="$out/port"
"$PYTHON" "$ROOT/scripts/otlp_recorder.py" "$out" "$portfile" 2>/dev/null &
recorder=$!
trap 'kill "$recorder" 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 100); do [[ -s "$portfile" ]] && break; sleep 0.05; done
[[ -s "$portfile" ]] || { echo "the recorder did not start" >&2; exit 1; }
endpoint="http://127.0.0.1:$(cat "$portfile")"
src=${PRIME_OTEL_SRC:-$ROOT/python/src}
log "prime_otel from $src against the recorder at $endpoint"
(cd "$ROOT/python/bench" && env -u PRIME_RUN_KEY OTEL_EXPORTER_OTLP_ENDPOINT="$endpoint" PRIME_STATUS_ENDPOINT="$endpoint" \
  PYTHONPATH="$PYTHONPATH:$src" "$PYTHON" cost.py "$@" 2> >(grep -v '^prime_otel' >&2))
