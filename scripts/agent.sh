# The agent tier's collector (deploy/agent/builder-config.yaml: OTLP in,
# load_balancing out, file_storage), built with its own pinned ocb into
# _build/agent/. Source this file and call build_agent (it sets AGENT to the
# binary's path), or run scripts/build-agent.sh.
#
# PRIME_AGENT_RELEASE picks the manifest: v0.165.0 (default: core v0.165.0
# like the gateway, contrib loadbalancingexporter v0.161.0) or v0.161.0
# (the fallback: everything at v0.161.0). ocb always matches the core.
set -euo pipefail

AGENT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AGENT_BUILD="$AGENT_ROOT/_build/agent"
AGENT_RELEASE=${PRIME_AGENT_RELEASE:-v0.165.0}
case "$AGENT_RELEASE" in
  v0.165.0)
    AGENT_MANIFEST=deploy/agent/builder-config.yaml
    AGENT="$AGENT_BUILD/otelcol-prime-agent/otelcol-prime-agent"
    ;;
  v0.161.0)
    AGENT_MANIFEST=deploy/agent/builder-config-v0.161.0.yaml
    AGENT="$AGENT_BUILD/otelcol-prime-agent-v0.161.0/otelcol-prime-agent"
    ;;
  *)
    printf 'PRIME_AGENT_RELEASE=%s: want v0.165.0 or v0.161.0\n' "$AGENT_RELEASE" >&2
    return 1 2>/dev/null || exit 1
    ;;
esac
# ocb per release, apart from the one scripts/lib.sh installs in GOPATH/bin.
AGENT_OCB="$AGENT_BUILD/bin/$AGENT_RELEASE/builder"

declare -F log >/dev/null || log() { printf '==> %s\n' "$*" >&2; }

ensure_agent_ocb() {
  local have
  have=$("$AGENT_OCB" version 2>&1 || true) # "ocb version v0.165.0", on stderr
  if [[ "$have" != *" $AGENT_RELEASE" ]]; then
    log "installing ocb $AGENT_RELEASE into ${AGENT_OCB%/builder}"
    GOBIN="${AGENT_OCB%/builder}" go install "go.opentelemetry.io/collector/cmd/builder@$AGENT_RELEASE"
  fi
}

build_agent() {
  ensure_agent_ocb
  # The manifest's core modules must be ocb's release.
  if ! grep -q "otlpreceiver $AGENT_RELEASE\$" "$AGENT_ROOT/$AGENT_MANIFEST"; then
    log "$AGENT_MANIFEST does not pin otlpreceiver at $AGENT_RELEASE, the ocb release"
    return 1
  fi
  mkdir -p "$AGENT_BUILD"
  local logfile="$AGENT_BUILD/ocb-$AGENT_RELEASE.log" start=$SECONDS
  log "building the agent collector with ocb $AGENT_RELEASE ($AGENT_MANIFEST; the first build takes minutes)"
  (cd "$AGENT_ROOT" && "$AGENT_OCB" --config "$AGENT_MANIFEST" >"$logfile" 2>&1) || {
    tail -50 "$logfile" >&2
    return 1
  }
  log "agent built in $((SECONDS - start))s: $AGENT ($(du -m "$AGENT" | cut -f1) MB)"
}
