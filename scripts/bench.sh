#!/usr/bin/env bash
# `npm run bench`: installs what it needs, builds (the daemon rows run dist/), then prints one markdown
# table of every benchmark row beside its kernel floor. Flags go to scripts/bench-all.ts:
#   --tier small|medium|large|xl (default large)   --quick (smoke run)   --xl (daemon memory at xl too)   --seed N
# and one flag of its own:
#   --strict   afterwards, strict mode's cost (scripts/bench-revoke.ts: work per change at 100,000 conntrack
#              entries, policy change → last packet of a revoked flow); root only, about a minute
# Kernel, daemon and data-plane rows need root; without root they are skipped, and the table says so.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/prereqs.sh
prepare
if [ "$(id -u)" != "0" ]; then
  echo "SKIPPING kernel, daemon and data-plane rows: they need root to create network namespaces (run 'sudo npm run bench')." >&2
fi
strict=0
args=()
for a in "$@"; do
  if [ "$a" = "--strict" ]; then strict=1; else args+=("$a"); fi
done
if [ "$strict" = "0" ]; then
  exec node --import ./scripts/register-ts.mjs scripts/bench-all.ts "${args[@]}"
fi
node --import ./scripts/register-ts.mjs scripts/bench-all.ts "${args[@]}"
echo
echo "## Strict mode cost"
echo
if [ "$(id -u)" != "0" ]; then
  echo "SKIPPED: scripts/bench-revoke.ts needs root (scratch network namespaces, conntrack -R)."
  exit 0
fi
echo "Command: node --import ./scripts/register-ts.mjs scripts/bench-revoke.ts"
echo
exec node --import ./scripts/register-ts.mjs scripts/bench-revoke.ts
