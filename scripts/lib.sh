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

# What go generate (mdatagen, pinned in internal/metadata/mdatagen/go.mod)
# writes from the metadata.yaml files (the exporter's, the prime_status
# extension's), relative to the root.
GENERATED=(metadata.yaml internal/metadata internal/metadatatest generated_component_test.go generated_package_test.go documentation.md
  primestatusextension/metadata.yaml primestatusextension/internal/metadata primestatusextension/generated_component_test.go primestatusextension/generated_package_test.go
  primeauthextension/metadata.yaml primeauthextension/internal/metadata primeauthextension/generated_component_test.go primeauthextension/generated_package_test.go
  primeambientprocessor/metadata.yaml primeambientprocessor/internal/metadata primeambientprocessor/generated_component_test.go primeambientprocessor/generated_package_test.go)

# generated_sums: a checksum line for each file of GENERATED (a missing
# path is no error: go generate may be the one to make it).
generated_sums() {
  (cd "$ROOT" && { find "${GENERATED[@]}" -type f -exec cksum {} + 2>/dev/null || true; } | sort)
}

# check_generated: go generate ./... of the root module must leave the
# generated files as they are, that is as committed on a fresh clone. The
# first run builds mdatagen (its module comes through the module proxy).
check_generated() {
  log "go generate (mdatagen): the generated files match metadata.yaml"
  local before
  before=$(generated_sums)
  if ! (cd "$ROOT" && go generate ./...); then
    log "FAIL: go generate ./... failed (see above)"
    return 1
  fi
  if [ "$(generated_sums)" != "$before" ]; then
    log "FAIL: go generate changed the generated files, so they do not match metadata.yaml; run 'go generate ./...' in the root and commit the result:"
    (cd "$ROOT" && git status --porcelain --untracked-files=all -- "${GENERATED[@]}" && git --no-pager diff -- "${GENERATED[@]}" | head -200) >&2 || true
    return 1
  fi
}

# apt_install <command-check> <packages…>: installs Debian packages unless
# the check (a shell command) already succeeds.
apt_install() {
  local check=$1
  shift
  if eval "$check" >/dev/null 2>&1; then
    return
  fi
  log "installing $* (apt-get)"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  local out
  out=$(mktemp)
  if ! ($sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@") >"$out" 2>&1; then
    cat "$out" >&2
    rm -f "$out"
    return 1
  fi
  rm -f "$out"
  eval "$check" >/dev/null
}

# The shared run registry's tests run a real redis-server (Debian's package)
# on a free loopback port.
ensure_redis() {
  apt_install "command -v redis-server" redis-server
}

# promtool (Debian's prometheus package, 2.42) checks deploy/monitoring's alert
# rules and runs their unit tests (deploy/monitoring_test.go), which fail
# without it. Only the tool is wanted: the package's service is not started.
ensure_promtool() {
  apt_install "command -v promtool" prometheus
}

# The report page's browser tests (e2e/report_*_test.go) drive Debian's
# chromium headless; they fail without it.
ensure_chromium() {
  apt_install "command -v chromium" chromium
}

# Debian's python3 with venv and wheel: what the python/ package's tests and
# its no-network install (pip --no-build-isolation) need.
PYTHON3=/usr/bin/python3
ensure_python() {
  apt_install "$PYTHON3 -c 'import venv, ensurepip, wheel, setuptools'" python3 python3-venv python3-wheel python3-setuptools
}

# test_python: the python/ package installed as a user installs it, with no
# package index (pip --no-deps --no-build-isolation into a venv of Debian's
# python3, which sees Debian's setuptools and wheel), then its unit tests run
# against the installed copy. The OTel SDK is not installed: the tests replace
# the one module that imports it (prime_otel._otel).
test_python() {
  local venv="$BUILD/pyvenv" work="$BUILD/pysrc"
  rm -rf "$venv" "$work"
  mkdir -p "$BUILD"
  # A copy, so the in-tree build leaves nothing behind in the checkout.
  cp -r "$ROOT/python" "$work"
  "$PYTHON3" -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install --quiet --no-index --no-deps --no-build-isolation "$work"
  (cd / && "$venv/bin/python" -c 'import prime_otel, prime_otel.prime_rl; print("==> imported prime_otel", prime_otel.__version__, "from", prime_otel.__file__)') >&2
  (cd "$work" && rm -rf src && "$venv/bin/python" -m unittest discover -s tests -t .)
}
