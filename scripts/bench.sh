#!/usr/bin/env bash
# The end-to-end benchmark (issue 11; not part of CI): a collector built with
# ocb from bench/builder-config.yaml (otlp gRPC receiver; prime, debug and
# otlphttp exporters) runs each configuration in turn on loads of ~2 KB and
# ~200 KB episodes built before the clock starts; prime sends to the in-repo
# fake platform, otlphttp to a counting sink, debug nowhere. Every rep also
# times the Snappy floor: Snappy over the load's own rows' cell text, the
# work BenchmarkSnappyFloor times, on every core of this machine at once. It prints,
# per load and queue mode (block_on_overflow true, "block", and false,
# "refuse": the senders send a refused request again), episodes/s, MB/s,
# collector CPU per 1,000 episodes, peak RSS and peak queue bytes, the
# floor, then the ratios (prime/debug, prime/otlphttp, prime against debug
# plus the floor) and which of issue 21's targets the run meets.
#
#   bash scripts/bench.sh              # the full loads, 3 reps (several minutes)
#   bash scripts/bench.sh --quick      # a tenth of each load, 1 rep: a smoke run
#   bash scripts/bench.sh --profile    # also CPU profiles of prime and debug per load, top 15
#
# Other arguments go to the harness (bench/), e.g. -reps 5, -small 100000,
# -large 2000, -configs prime,debug, -overflow block; see `go run ./bench -h`
# from bench/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BENCH_OTELCOL="$BUILD/otelcol-bench/otelcol-bench"
PRIMEBENCH="$BUILD/primebench"
WORKDIR="$BUILD/bench"

profile=""
args=()
for a in "$@"; do
  case "$a" in
    --profile) profile="$WORKDIR/profiles" ;;
    --quick) args+=(-quick) ;;
    *) args+=("$a") ;;
  esac
done

build_bench_collector() {
  ensure_ocb
  mkdir -p "$BUILD"
  log "building the bench collector with ocb (the first build takes several minutes)"
  (cd "$ROOT" && "$OCB" --config bench/builder-config.yaml >"$BUILD/ocb-bench.log" 2>&1) || {
    tail -50 "$BUILD/ocb-bench.log" >&2
    return 1
  }
}

build_bench_collector
log "building the harness"
(cd "$ROOT/bench" && go build -o "$PRIMEBENCH" .)

if [ -n "$profile" ]; then
  rm -rf "$profile"
  args+=(-profile-dir "$profile")
fi
log "running the benchmark (collector logs and configs in $WORKDIR)"
(cd "$ROOT" && "$PRIMEBENCH" -collector "$BENCH_OTELCOL" -workdir "$WORKDIR" "${args[@]}")

if [ -n "$profile" ]; then
  # In the order they were written: the loads' order.
  for p in $(ls -tr "$profile"/*.pprof); do
    printf '\nCPU profile, %s (top 15):\n' "$(basename "$p" .pprof)"
    go tool pprof -top -nodecount=15 "$BENCH_OTELCOL" "$p"
  done
fi
