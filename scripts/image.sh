#!/usr/bin/env bash
# The container images (deploy/image/): FROM scratch, a static binary
# (CGO_ENABLED=0) built with ocb into _build/image/ (apart from the normal
# builds), Debian's CA certificates, the user 10001:10001, a writable
# storage directory and the baked config. Built with Debian's podman, which
# is installed with apt-get when missing (with runc: crun refuses these
# machines' hybrid cgroups).
#
#   bash scripts/image.sh          build both images, print their sizes
#   bash scripts/image.sh --test   then run the gateway image against the
#                                  fake platform and the demo trainer, with
#                                  authentication on: TLS and a bearer token
#                                  of the test's own, a sender without the
#                                  token refused (e2e/image_test.go, build
#                                  tag image)
#
# GATEWAY_IMAGE and AGENT_IMAGE override the names (with their tags).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/agent.sh"

GATEWAY_IMAGE="${GATEWAY_IMAGE:-ghcr.io/primeintellect/otelcol-prime:0.1.0}"
AGENT_IMAGE="${AGENT_IMAGE:-ghcr.io/primeintellect/otelcol-prime-agent:0.1.0}"

IMAGE_BUILD="$BUILD/image"

run_test=0
case "${1:-}" in
  "") ;;
  --test) run_test=1 ;;
  *)
    printf 'usage: %s [--test]\n' "$0" >&2
    exit 2
    ;;
esac

ensure_podman() {
  apt_install "command -v podman && command -v runc" podman runc
  apt_install "test -s /etc/ssl/certs/ca-certificates.crt" ca-certificates
  # podman run refuses to set the default RLIMIT_NPROC/RLIMIT_NOFILE on
  # these machines; without default ulimits the container inherits podman's.
  mkdir -p "$IMAGE_BUILD"
  printf '[containers]\ndefault_ulimits = []\n' >"$IMAGE_BUILD/containers.conf"
  export CONTAINERS_CONF="$IMAGE_BUILD/containers.conf"
}

# build_static <manifest> <ocb> <name>: the manifest's distribution, built
# with CGO_ENABLED=0 into _build/image/<name>/<name>. ocb already turns cgo
# off unless a manifest asks for it; set and checked here all the same, as
# scratch has no libc. ocb reads a copy of the manifest whose output_path,
# and the replaces relative to it, are absolute.
build_static() {
  local manifest=$1 ocb=$2 name=$3
  local out="$IMAGE_BUILD/$name" copy="$IMAGE_BUILD/$name.builder-config.yaml"
  local logfile="$IMAGE_BUILD/ocb-$name.log" start=$SECONDS
  mkdir -p "$IMAGE_BUILD"
  # This module's replace points from the manifest's output_path back to the
  # root (../.. for the collector's, ../../.. for the agent's).
  sed -e "s#^\(  output_path:\).*#\1 $out#" -e "s#\(github.com/primeintellect/primeexporter =>\) \.\.[./]*\$#\1 $ROOT#" \
    "$ROOT/$manifest" >"$copy"
  if grep -q '=> \.' "$copy"; then
    log "$manifest has a relative replace that scripts/image.sh does not rewrite: $(grep '=> \.' "$copy")"
    return 1
  fi
  log "building $name static (CGO_ENABLED=0) with ocb into $out"
  (cd "$ROOT" && CGO_ENABLED=0 "$ocb" --config "$copy" >"$logfile" 2>&1) || {
    tail -50 "$logfile" >&2
    return 1
  }
  if ! go version -m "$out/$name" | grep -q 'CGO_ENABLED=0'; then
    log "$out/$name was not built with CGO_ENABLED=0"
    return 1
  fi
  log "$name built in $((SECONDS - start))s ($(du -m "$out/$name" | cut -f1) MB)"
}

# build_image <image> <containerfile> <binary> <config> <storage>: stages
# the build context the Containerfile expects (its header lists it) and
# builds the image. <storage> is the storage directory's name in /var/lib.
build_image() {
  local image=$1 containerfile=$2 binary=$3 config=$4 storage=$5
  local context
  context="$IMAGE_BUILD/context-$(basename "$binary")"
  rm -rf "$context"
  mkdir -p "$context/dirs/tmp" "$context/dirs/var/lib" "$context/storage/$storage"
  # COPY keeps the modes of what a directory holds, not of the directory.
  chmod 1777 "$context/dirs/tmp"
  chmod 0755 "$context/dirs/var" "$context/dirs/var/lib"
  chmod 0750 "$context/storage/$storage"
  ln -f "$binary" "$context/" 2>/dev/null || cp "$binary" "$context/"
  cp "$ROOT/$config" "$context/config.yaml"
  cp /etc/ssl/certs/ca-certificates.crt "$context/"
  printf 'root:x:0:0:root:/:/sbin/nologin\notelcol:x:10001:10001:otelcol:/var/lib/%s:/sbin/nologin\n' "$storage" >"$context/passwd"
  printf 'root:x:0:\notelcol:x:10001:\n' >"$context/group"
  chmod 0644 "$context/passwd" "$context/group" "$context/config.yaml" "$context/ca-certificates.crt"
  log "podman build $image ($containerfile)"
  podman build --quiet --file "$ROOT/$containerfile" --tag "$image" "$context" >/dev/null
}

image_size() {
  local bytes
  bytes=$(podman image inspect --format '{{.Size}}' "$1")
  awk -v image="$1" -v b="$bytes" 'BEGIN { printf "%s: %.1f MB (%d bytes)\n", image, b / 1e6, b }'
}

ensure_podman
ensure_ocb
ensure_agent_ocb
build_static builder-config.yaml "$OCB" otelcol-prime
build_static "$AGENT_MANIFEST" "$AGENT_OCB" otelcol-prime-agent
build_image "$GATEWAY_IMAGE" deploy/image/Containerfile "$IMAGE_BUILD/otelcol-prime/otelcol-prime" deploy/image/gateway.yaml otelcol-prime
build_image "$AGENT_IMAGE" deploy/image/Containerfile.agent "$IMAGE_BUILD/otelcol-prime-agent/otelcol-prime-agent" deploy/image/agent.yaml otelcol-prime-agent
for image in "$GATEWAY_IMAGE" "$AGENT_IMAGE"; do
  image_size "$image"
done

if [ "$run_test" = 1 ]; then
  build_demotrainer
  log "image test: the gateway image in podman, the fake platform, the demo trainer (e2e/image_test.go)"
  cd "$ROOT/e2e"
  go vet -tags image ./...
  PRIME_GATEWAY_IMAGE="$GATEWAY_IMAGE" PRIME_DEMOTRAINER="$DEMOTRAINER" \
    go test -tags image -run '^TestTheGatewayImage' -count=1 -v -timeout 15m ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
fi
