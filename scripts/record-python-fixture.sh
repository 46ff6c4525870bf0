#!/usr/bin/env bash
# Records the trainer of docs/python.md (cmd/pytrainer/trainer.py) with the
# real OpenTelemetry Python SDK 1.44.0 as the fixture set
# e2e/testdata/python-sdk-1.44/docs-trainer/: the raw OTLP/HTTP request bodies
# it sends, in send order, and the SHA-256 of the trainer they came from.
# CI never runs this: it replays the committed files (e2e/python_replay_test.go).
#
#   bash scripts/record-python-fixture.sh
#
# Needs Debian's python3 (3.11) with python3-protobuf and python3-requests
# (apt-get install python3-protobuf python3-requests); pip cannot install the
# SDK here, so the packages come from their git tags and go on PYTHONPATH:
#   OTEL_PYTHON_GIT        a git dir of github.com/open-telemetry/opentelemetry-python (tag v1.44.0)
#   TYPING_EXTENSIONS_GIT  a git dir of github.com/python/typing_extensions (tag 4.15.0; Debian's 4.4 lacks
#                          typing_extensions.deprecated, which the semantic conventions import)
# Either may be unset: it is then cloned (bare) into _build/pysdk/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-"$ROOT/e2e/testdata/python-sdk-1.44/docs-trainer"}
PYTHON=${PYTHON:-/usr/bin/python3}
OTEL_TAG=v1.44.0
TE_TAG=4.15.0
RUN_KEY=py-docs-trainer
WORK="$ROOT/_build/pysdk"

log() { printf '==> %s\n' "$*" >&2; }

"$PYTHON" -c 'import google.protobuf, requests' 2>/dev/null || {
  echo "$PYTHON lacks protobuf or requests: apt-get install python3-protobuf python3-requests" >&2
  exit 1
}

gitdir() { # name url -> a git dir holding the repository
  local dir="$WORK/$1.git"
  [[ -d "$dir" ]] || git clone --quiet --bare "$2" "$dir"
  echo "$dir"
}
OTEL_PYTHON_GIT=${OTEL_PYTHON_GIT:-$(gitdir opentelemetry-python https://github.com/open-telemetry/opentelemetry-python)}
TYPING_EXTENSIONS_GIT=${TYPING_EXTENSIONS_GIT:-$(gitdir typing_extensions https://github.com/python/typing_extensions)}

log "assembling the SDK $OTEL_TAG and typing_extensions $TE_TAG in $WORK/src"
rm -rf "$WORK/src"
mkdir -p "$WORK/src"
packages=(opentelemetry-api opentelemetry-sdk opentelemetry-semantic-conventions opentelemetry-proto
  exporter/opentelemetry-exporter-otlp-proto-common exporter/opentelemetry-exporter-otlp-proto-http)
git --git-dir="$OTEL_PYTHON_GIT" archive "$OTEL_TAG" "${packages[@]/%//src}" | tar -x -C "$WORK/src"
git --git-dir="$TYPING_EXTENSIONS_GIT" archive "$TE_TAG" src/typing_extensions.py | tar -x -C "$WORK/src"
PYTHONPATH="$WORK/src/src"
for p in "${packages[@]}"; do PYTHONPATH="$PYTHONPATH:$WORK/src/$p/src"; done
export PYTHONPATH

version=$("$PYTHON" -c 'from opentelemetry.sdk.version import __version__; print(__version__)')
[[ "$version" == "${OTEL_TAG#v}" ]] || { echo "the assembled SDK says $version, want ${OTEL_TAG#v}" >&2; exit 1; }

log "recording the trainer into $OUT"
mkdir -p "$OUT"
rm -f "$OUT"/*.pb
portfile="$WORK/recorder.port"
rm -f "$portfile"
"$PYTHON" "$ROOT/scripts/otlp_recorder.py" "$OUT" "$portfile" &
recorder=$!
trap 'kill "$recorder" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -s "$portfile" ]] && break; sleep 0.05; done
[[ -s "$portfile" ]] || { echo "the recorder did not start" >&2; exit 1; }

OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$(cat "$portfile")" PRIME_RUN_KEY=$RUN_KEY \
  "$PYTHON" "$ROOT/cmd/pytrainer/trainer.py"
kill -TERM "$recorder"
wait "$recorder"
trap - EXIT

(cd "$ROOT/cmd/pytrainer" && sha256sum trainer.py) >"$OUT/trainer.sha256"
ls -l "$OUT" >&2
