#!/usr/bin/env bash
# The end-to-end benchmark (issues 11, 34 and 45; not part of CI): a collector
# built with ocb from bench/builder-config.yaml (otlp gRPC receiver; prime,
# debug and otlphttp exporters) runs each configuration in turn on loads of
# ~2 KB and ~200 KB episodes built before the clock starts, for each shape of
# episode; prime sends to the in-repo fake platform, otlphttp to a counting
# sink, debug nowhere. The shapes (bench/shape*.go), each reported apart:
#   plain      the bench's first load: a two-branch chat as a pdata map body
#   verifiers  a tool-using chat as verifiers records it (the trajectory
#              repeats the prompt and the completion, with tool calls and
#              reasoning_content), JSON text as prime-otel sends it
#   native     the verifiers Episode.to_record() fixture, lengthened, as
#              prime-otel sends it (its fixed part makes the small one ~3.6 KB)
#   tokens     prime-otel's own cost bench's episode: a short chat with token
#              ids and logprobs, the large one mostly arrays
# Every rep also times the Snappy floor: Snappy over the load's own rows'
# cell text (each shape's own), the work BenchmarkSnappyFloor times, on every
# core of this machine at once. It prints, per shape, load and queue mode
# (block_on_overflow true, "block", and false, "refuse": the senders send a
# refused request again), episodes/s, MB/s, collector CPU per 1,000 episodes,
# peak RSS and peak queue bytes, the floor; then per shape the ratios
# (prime/debug, prime/otlphttp, prime against debug plus the floor); and
# last one table of issue 45's targets, a shape a row: prime's CPU per
# episode against debug's plus the floor at 2 KB (target ≤ 2.0) and at
# 200 KB (≤ 1.3), each beside its target with met or NOT met, and the 2 KB
# throughput beside debug's. Every exporter's in-memory queue is 32 MiB
# (-queue-mib), about what its consumers hold in flight, unless said.
#
#   bash scripts/bench.sh                    # every shape, the full loads, 3 reps (tens of minutes)
#   bash scripts/bench.sh --quick            # a tenth of each load, 1 rep: a smoke run
#   bash scripts/bench.sh --shape verifiers  # only these shapes (comma-separated)
#   bash scripts/bench.sh --profile          # also CPU profiles of prime and debug per load, top 15
#   bash scripts/bench.sh --shape verifiers -configs prime,prime-tenants -overflow block
#                                            # the multi-tenant gateway (prime_auth, tenants::enabled)
#                                            # against the single-key one
#   bash scripts/bench.sh --shape verifiers -configs prime,prime-agent -overflow block
#                                            # the agent tier (deploy/agent's build, load_balancing)
#                                            # in front of the gateway, against the gateway alone
#   bash scripts/bench.sh -configs prime,debug -overflow block -reps 5
#                                            # the figures of docs/performance.md
#   bash scripts/bench.sh --shape verifiers -configs prime,debug -overflow block -queue-mib 256
#                                            # every exporter's queue at 256 MiB instead of 32: the
#                                            # backlog prime builds behind the senders, deeper
#
# Other arguments go to the harness (bench/), e.g. -reps 5, -small 100000,
# -large 2000, -configs prime,debug, -overflow block; see `go run ./bench -h`
# from bench/. `cd bench && go test -run XXX -bench LoadEpisodes` times the
# exporter's own share of each shape in process.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BENCH_OTELCOL="$BUILD/otelcol-bench/otelcol-bench"
PRIMEBENCH="$BUILD/primebench"
WORKDIR="$BUILD/bench"

profile=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="$WORKDIR/profiles" ;;
    --quick) args+=(-quick) ;;
    --shape | --shapes)
      [ $# -ge 2 ] || { echo "bench.sh: $1 needs a shape name (plain, verifiers, native, tokens)" >&2; exit 2; }
      args+=(-shapes "$2")
      shift
      ;;
    --shape=* | --shapes=*) args+=(-shapes "${1#*=}") ;;
    *) args+=("$1") ;;
  esac
  shift
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
if [[ " ${args[*]} " == *prime-agent* ]]; then
  # The agent tier in front of the gateway (-configs …,prime-agent).
  source "$ROOT/scripts/agent.sh"
  build_agent
  args+=(-agent "$AGENT")
fi
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
