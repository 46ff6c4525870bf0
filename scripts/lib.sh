# Shared by scripts/demo.sh and scripts/test.sh: build the pinned tools and
# binaries into _build/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/_build"
OCB_VERSION=v0.165.0
OTELCOL="$BUILD/otelcol-prime/otelcol-prime"
DEMOTRAINER="$BUILD/demotrainer"
EVALRUNNER="$BUILD/evalrunner"
PRIMESYNC="$BUILD/prime-sync"

log() { printf '==> %s\n' "$*" >&2; }

# ocb is installed with go install at the pinned release.
ensure_ocb() {
  OCB="$(go env GOPATH)/bin/builder"
  if ! "$OCB" version 2>&1 | grep -q "${OCB_VERSION#v}"; then
    log "installing ocb $OCB_VERSION"
    go install "go.opentelemetry.io/collector/cmd/builder@$OCB_VERSION"
  fi
}

build_collector() {
  ensure_ocb
  mkdir -p "$BUILD"
  log "building the collector with ocb (the first build takes several minutes)"
  (cd "$ROOT" && "$OCB" --config builder-config.yaml >"$BUILD/ocb.log" 2>&1) || {
    tail -50 "$BUILD/ocb.log" >&2
    return 1
  }
}

build_demotrainer() {
  mkdir -p "$BUILD"
  log "building the demo trainer"
  (cd "$ROOT/cmd/demotrainer" && go build -o "$DEMOTRAINER" .)
}

build_evalrunner() {
  mkdir -p "$BUILD"
  log "building the eval runner"
  (cd "$ROOT/cmd/evalrunner" && go build -o "$EVALRUNNER" .)
}

build_sync() {
  mkdir -p "$BUILD"
  log "building prime-sync"
  (cd "$ROOT/cmd/prime-sync" && go build -o "$PRIMESYNC" .)
}

# The shared run registry's tests run a real redis-server (Debian's package)
# on a free loopback port; install it when it is missing.
ensure_redis() {
  if command -v redis-server >/dev/null 2>&1; then
    return
  fi
  log "installing redis-server (apt-get)"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  local out
  out=$(mktemp)
  if ! ($sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server) >"$out" 2>&1; then
    cat "$out" >&2
    rm -f "$out"
    return 1
  fi
  rm -f "$out"
  command -v redis-server >/dev/null
}
