#!/usr/bin/env bash
# The tests: the python/ package's install and unit tests, vet and race-test
# every module (and check that go generate leaves the component's generated
# files as committed), build the collector with ocb,
# build prime-sync and the agent, check deploy/'s manifests against the
# built collectors, run the end-to-end tests against the built binaries,
# then build the container images and run the gateway's (scripts/image.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/agent.sh"

cd "$ROOT"
ensure_redis
ensure_python
ensure_chromium
ensure_promtool

log "python/: pip install into a venv with no package index, then its unit tests"
test_python

log "go vet + go test -race (component)"
go vet ./...
go test -race -count=1 ./...
check_generated

log "go vet + go test -race (the demo commands' library)"
(cd cmd/internal/trainerlib && go vet ./... && go test -race -count=1 ./...)

log "go vet + go test -race (demo trainer)"
(cd cmd/demotrainer && go vet ./... && go test -race -count=1 ./...)

log "go vet + go test -race (eval runner)"
(cd cmd/evalrunner && go vet ./... && go test -race -count=1 ./...)

# The benchmark harness runs outside CI (scripts/bench.sh); its own tests
# (configs it renders, the shapes it sends, its report) run here.
log "go vet + go test -race (the benchmark harness)"
(cd bench && go vet ./... && go test -race -count=1 ./...)

build_collector
build_demotrainer
build_evalrunner
build_sync
build_agent

log "deploy/: Kubernetes manifests, Helm values, Operator sidecar (strict decoding, the pieces fit, validate with the built collectors); alert rules (promtool check and test rules) and dashboard"
(cd deploy && go vet ./... && PRIME_OTELCOL="$OTELCOL" PRIME_AGENT="$AGENT" go test -count=1 ./...)

log "end-to-end tests (built collector + demo trainer + fake platform)"
(cd e2e && go vet ./... && PRIME_OTELCOL="$OTELCOL" PRIME_DEMOTRAINER="$DEMOTRAINER" PRIME_EVALRUNNER="$EVALRUNNER" PRIME_AGENT="$AGENT" PRIME_SYNC="$PRIMESYNC" go test -race -count=1 -v -timeout 30m ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)')

log "container images: build with podman, run the gateway image against the fake platform (scripts/image.sh --test)"
bash "$ROOT/scripts/image.sh" --test
