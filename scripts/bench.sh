#!/usr/bin/env bash
# `npm run bench`: installs what it needs, builds (the daemon rows run dist/), then prints one markdown
# table of every benchmark row beside its kernel floor. Flags go to scripts/bench-all.ts:
#   --tier small|medium|large|xl (default large)   --quick (smoke run)   --xl (daemon memory at xl too)   --seed N
# Kernel, daemon and data-plane rows need root; without root they are skipped, and the table says so.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/prereqs.sh
prepare
if [ "$(id -u)" != "0" ]; then
  echo "SKIPPING kernel, daemon and data-plane rows: they need root to create network namespaces (run 'sudo npm run bench')." >&2
fi
node --import ./scripts/register-ts.mjs scripts/bench-all.ts "$@"

# ClusterNetworkPolicy rows (issue 16), after the table: scripts/bench-cnp.ts (pure) and, as root,
# scripts/bench-cnp-kernel.ts (first apply and one CNP change against the tools' floor).
cnp_tier=large; cnp_runs=10; cnp_kernel_runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --tier) cnp_tier="$2"; shift ;;
    --quick) cnp_runs=2; cnp_kernel_runs=1 ;;
  esac
  shift
done
echo
echo "ClusterNetworkPolicy (issue 16): ${cnp_tier} tier + 100 CNPs"
node --import ./scripts/register-ts.mjs scripts/bench-cnp.ts --tier "$cnp_tier" --runs "$cnp_runs"
if [ "$(id -u)" = "0" ]; then
  node --import ./scripts/register-ts.mjs scripts/bench-cnp-kernel.ts --tier "$cnp_tier" --runs "$cnp_kernel_runs"
fi
