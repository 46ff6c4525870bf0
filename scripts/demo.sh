#!/usr/bin/env bash
# The main job: build the collector, run it in offline mode with the demo
# trainer, and show what landed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT="${PRIME_OFFLINE_DIR:-$ROOT/prime-runs}"
export PRIME_OFFLINE_DIR="$OUT"
HTTP_ADDR="${PRIME_OTLP_HTTP:-127.0.0.1:4318}"
export PRIME_OTLP_HTTP="$HTTP_ADDR"
export PRIME_OTLP_GRPC="${PRIME_OTLP_GRPC:-127.0.0.1:4317}"
HEALTH_ADDR="${PRIME_HEALTH_ENDPOINT:-127.0.0.1:13133}"
export PRIME_HEALTH_ENDPOINT="$HEALTH_ADDR"
# System metrics (deploy/system-metrics.yaml, docs/system-metrics.md): the
# collector samples this host and the demo trainer's process and puts them
# into the trainer's run, named by its key. The demo is short, so it samples
# every second where a real run would keep the 15 s default.
export PRIME_RUN_KEY="${PRIME_RUN_KEY:-demo-run-$(date +%s)}"
export PRIME_SYSTEM_INTERVAL="${PRIME_SYSTEM_INTERVAL:-1s}"
export PRIME_SYSTEM_PROCESS="${PRIME_SYSTEM_PROCESS:-demotrainer}"

build_collector
build_demotrainer
build_sync

mkdir -p "$OUT"
before=$(ls "$OUT" 2>/dev/null | sort)
log "starting the collector (offline mode, runs go to $OUT)"
"$OTELCOL" --config "$ROOT/testdata/demo-offline.yaml" --config "$ROOT/deploy/system-metrics.yaml" >"$BUILD/collector.log" 2>&1 &
collector=$!
trap 'kill $collector 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/${HTTP_ADDR%:*}/${HTTP_ADDR##*:}") 2>/dev/null; then break; fi
  kill -0 $collector 2>/dev/null || { cat "$BUILD/collector.log" >&2; exit 1; }
  sleep 0.1
done

log "running the demo trainer"
"$DEMOTRAINER" -endpoint "$HTTP_ADDR" -run-key "$PRIME_RUN_KEY" -step-delay 150ms "$@"

run_dir=""
for _ in $(seq 1 150); do
  for d in $(comm -13 <(echo "$before") <(ls "$OUT" | sort)); do
    if grep -q '"status": "completed"' "$OUT/$d/run.json" 2>/dev/null; then run_dir="$OUT/$d"; fi
  done
  [ -n "$run_dir" ] && break
  sleep 0.2
done
# The readiness answer a Kubernetes probe would get (docs/operations.md#health).
health=$( (exec 3<>"/dev/tcp/${HEALTH_ADDR%:*}/${HEALTH_ADDR##*:}" &&
  printf 'GET /status HTTP/1.0\r\nHost: demo\r\n\r\n' >&3 && cat <&3) 2>/dev/null | tr -d '\r' | sed -n '1p;$p' | tr '\n' ' ')
kill -TERM $collector; wait $collector || true
trap - EXIT

if [ -z "$run_dir" ]; then
  echo "the run was not closed out; collector log:" >&2
  tail -40 "$BUILD/collector.log" >&2
  exit 1
fi

steps=$(grep -o '"step":[0-9]*' "$run_dir/metrics.jsonl" | sort -u | wc -l)
posts=$(wc -l <"$run_dir/metrics.jsonl")
echo
echo "What landed in $run_dir:"
ls -l "$run_dir"
echo
echo "run.json:"
cat "$run_dir/run.json"
echo
echo "metrics.jsonl: $posts posts covering $steps steps; the last step's:"
grep '"step":' "$run_dir/metrics.jsonl" | tail -1
echo
system_rows=$(grep -c '"system/' "$run_dir/metrics.jsonl" || true)
echo "System metrics: $system_rows time-keyed rows, sampled by the collector (no trainer code); the keys:"
grep -o '"system/[^"]*"' "$run_dir/metrics.jsonl" | sort -u | tr -d '"' | sed 's/^/  /'
echo "The last one:"
grep '"system/' "$run_dir/metrics.jsonl" | tail -1
echo
echo "samples/: the step-keyed Parquet sample tables (every ${PRIME_STEP_INTERVAL:-10}th step):"
ls -l "$run_dir/samples" 2>/dev/null | tail -n +2 || echo "  (none)"
echo
echo "Health, GET /status on $HEALTH_ADDR: ${health:-no answer}"
echo "Collector log: $BUILD/collector.log"
echo
# The run's report page (docs/prime-sync.md#the-run-report): one file,
# opened from disk, no server. Its path is the last line.
report=$("$PRIMESYNC" report "$run_dir")
echo "The run's report page (open it in a browser):"
echo "$report"
