#!/usr/bin/env bash
# Build the agent tier's collector (see scripts/agent.sh) and print its path:
#   PRIME_AGENT=$(bash scripts/build-agent.sh)
source "$(dirname "${BASH_SOURCE[0]}")/agent.sh"

build_agent
echo "$AGENT"
