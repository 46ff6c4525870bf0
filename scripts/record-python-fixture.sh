#!/usr/bin/env bash
# Records Python trainers with the real OpenTelemetry Python SDK 1.44.0 as
# fixture sets under e2e/testdata/python-sdk-1.44/: the raw OTLP/HTTP request
# bodies each sends, in send order, and the SHA-256 of the sources they came
# from. CI never runs this: it replays the committed files
# (e2e/python_replay_test.go, e2e/python_package_test.go), and a test fails
# when a recorded source changes until it is recorded again.
#   docs-trainer/          cmd/pytrainer/trainer.py, the trainer of docs/python.md
#   prime-otel-trainer/    python/examples/trainer.py: the prime_runs train API on prime_otel
#   prime-otel-monitor/    python/examples/prime_rl_orchestrator.py: OtelMonitor driven as prime-rl does, numpy values
#   prime-otel-eval/       python/examples/eval.py: an evaluation with its summary
#   prime-otel-crash/      python/examples/crash.py: a trainer that dies without finishing
#   prime-otel-late/       python/examples/late_collector.py: a trainer that logs 20 steps over 30 s
#                          before its collector (the recorder) starts
#
#   bash scripts/record-python-fixture.sh [set ...]     (default: every set)
#
# The SDK is assembled from its git tags by scripts/pysdk.sh (its header says
# what it needs: Debian's python3 with python3-protobuf, python3-requests and
# python3-numpy, and OTEL_PYTHON_GIT / TYPING_EXTENSIONS_GIT or the network).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIXTURES="$ROOT/e2e/testdata/python-sdk-1.44"
. "$ROOT/scripts/pysdk.sh"

# record <set> <run key> <script> [late seconds]: runs the script against a
# recorder and stores what it sent, numbered in send order. With a delay, the
# script starts first and the recorder that many seconds later, on the port
# the script was given.
record() {
  local set=$1 key=$2 script=$3 late=${4:-0}
  local out="$FIXTURES/$set" portfile="$WORK/recorder.port"
  log "recording $script into $out"
  mkdir -p "$out"
  rm -f "$out"/*.pb "$out"/*.json "$portfile"
  local port=0 trainer=""
  if ((late > 0)); then
    port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    start_trainer "$script" "$key" "$port" &
    trainer=$!
    log "the trainer runs with no collector for ${late}s"
    sleep "$late"
  fi
  "$PYTHON" "$ROOT/scripts/otlp_recorder.py" "$out" "$portfile" "$port" &
  local recorder=$!
  trap 'kill "$recorder" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do [[ -s "$portfile" ]] && break; sleep 0.05; done
  [[ -s "$portfile" ]] || { echo "the recorder did not start" >&2; exit 1; }
  if [[ -n "$trainer" ]]; then
    wait "$trainer" || log "$script exited with $?"
  else
    start_trainer "$script" "$key" "$(cat "$portfile")"
  fi
  kill -TERM "$recorder"
  wait "$recorder"
  trap - EXIT
  ls -l "$out" >&2
}

start_trainer() { # script key port
  # A crash is what one set records: its exit status is not this script's.
  # The trainer sends a made-up platform key (over loopback, as a
  # multi-tenant gateway's trainer does), never the caller's own, and no
  # headers or CA from the caller's environment.
  (cd "$(dirname "$1")" && env -u RANK -u RUN_ID -u PRIME_RUN_ID -u PRIME_STATUS_ENDPOINT \
    -u OTEL_EXPORTER_OTLP_HEADERS -u OTEL_EXPORTER_OTLP_LOGS_HEADERS \
    -u OTEL_EXPORTER_OTLP_CERTIFICATE -u OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE \
    PRIME_API_KEY=recording-key-not-a-platform-key \
    OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$3" PRIME_RUN_KEY="$2" \
    PYTHONPATH="$PYTHONPATH:$ROOT/python/src" "$PYTHON" "$1") || log "$1 exited with $?"
}

# The package's sources and the example: a change to any of them fails
# e2e/python_package_test.go until the set is recorded again.
package=(python/src/prime_otel/*.py python/examples/episodes.py)
record_example() { # set key example.py [late seconds]
  record "$1" "$2" "$ROOT/python/examples/$3" "${4:-0}"
  (cd "$ROOT" && sha256sum "python/examples/$3" "${package[@]}") >"$FIXTURES/$1/source.sha256"
}

sets=("$@")
[[ ${#sets[@]} -gt 0 ]] || sets=(docs-trainer prime-otel-trainer prime-otel-monitor prime-otel-eval prime-otel-crash prime-otel-late)
for set in "${sets[@]}"; do
  case $set in
  docs-trainer)
    record docs-trainer py-docs-trainer "$ROOT/cmd/pytrainer/trainer.py"
    (cd "$ROOT/cmd/pytrainer" && sha256sum trainer.py) >"$FIXTURES/docs-trainer/trainer.sha256"
    ;;
  prime-otel-trainer) record_example "$set" py-otel-trainer trainer.py ;;
  prime-otel-monitor) record_example "$set" py-otel-monitor prime_rl_orchestrator.py ;;
  prime-otel-eval) record_example "$set" py-otel-eval eval.py ;;
  prime-otel-crash) record_example "$set" py-otel-crash crash.py ;;
  prime-otel-late) record_example "$set" py-otel-late late_collector.py 30 ;;
  *) echo "no fixture set $set" >&2; exit 2 ;;
  esac
done
