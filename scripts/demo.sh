#!/usr/bin/env bash
# `npm run demo`: installs what it needs, builds, then runs scripts/demo.ts as root: a 2-node sandbox of
# network namespaces with `netfence daemon` on each node, reachability before and after the example
# policies in scripts/demo/, a `netfence diff` preview of a pending change, and a full clean-up.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != "0" ]; then
  echo "npm run demo needs root: it creates network namespaces and programs iptables/ipsets inside them" >&2
  echo "(never in this machine's own namespace). Run: sudo npm run demo" >&2
  exit 1
fi
source scripts/lib/prereqs.sh
echo "building…" >&2
prepare
echo "node $(node --version) ($(command -v node))" >&2
exec node --import ./scripts/register-ts.mjs scripts/demo.ts "$@"
