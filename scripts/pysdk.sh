# Sourced by the scripts that run Python with the real OpenTelemetry Python
# SDK 1.44.0 (record-python-fixture.sh, python-cost.sh): pip cannot install
# the SDK here, so its packages come from their git tags and go on PYTHONPATH.
#   OTEL_PYTHON_GIT        a git dir of github.com/open-telemetry/opentelemetry-python (tag v1.44.0)
#   TYPING_EXTENSIONS_GIT  a git dir of github.com/python/typing_extensions (tag 4.15.0; Debian's 4.4 lacks
#                          typing_extensions.deprecated, which the semantic conventions import)
# Either may be unset: it is then cloned (bare) into _build/pysdk/.
# Needs Debian's python3 (3.11) with python3-protobuf, python3-requests and python3-numpy.
# Expects ROOT; sets PYTHON, WORK and exports PYTHONPATH.

PYTHON=${PYTHON:-/usr/bin/python3}
OTEL_TAG=v1.44.0
TE_TAG=4.15.0
WORK="$ROOT/_build/pysdk"

log() { printf '==> %s\n' "$*" >&2; }

"$PYTHON" -c 'import google.protobuf, requests, numpy' 2>/dev/null || {
  echo "$PYTHON lacks protobuf, requests or numpy: apt-get install python3-protobuf python3-requests python3-numpy" >&2
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
