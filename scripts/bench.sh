#!/usr/bin/env bash
# `npm run bench`: installs what it needs, builds (the daemon rows run dist/), then prints one markdown
# table of every benchmark row beside its kernel floor. Flags go to scripts/bench-all.ts:
#   --tier small|medium|large|xl (default large)   --quick (smoke run)   --xl (daemon memory at xl too)   --seed N
#   --dual-stack: instead, the dual-stack rows (scripts/bench-dual-stack.ts: every pod IPv4 + IPv6, each family
#                 beside its own floor); other flags (--tier, --runs, --seed, --only) go to that script.
#   --strict: instead, strict mode's cost (scripts/bench-revoke.ts, root only: work per change at 100,000
#             conntrack entries, policy change → last packet of a revoked flow); --entries N, --only work|latency
#             go to that script.
#   --churn: instead, the daemon under sustained changes (scripts/bench-churn.ts, root only): event → programmed
#            from its histogram and from outside, RSS slope, CPU per change, a final diff; --minutes N (10),
#            --rate R (20 a second), --tier large|xl, --quick (1 minute), --flips-only (set-only changes) go to that script.
# Kernel, daemon and data-plane rows need root; without root they are skipped, and the table says so.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/prereqs.sh
prepare
echo "node $(node --version) ($(command -v node))" >&2
if [ "$(id -u)" != "0" ]; then
  echo "SKIPPING kernel, daemon and data-plane rows: they need root to create network namespaces (run 'sudo npm run bench')." >&2
fi
if [ "${1:-}" = "--dual-stack" ]; then
  shift
  exec node --import ./scripts/register-ts.mjs scripts/bench-dual-stack.ts "$@"
fi
if [ "${1:-}" = "--strict" ]; then
  shift
  [ "$(id -u)" = "0" ] || { echo "--strict needs root (scratch network namespaces, conntrack -R): run 'sudo npm run bench -- --strict'." >&2; exit 2; }
  exec node --import ./scripts/register-ts.mjs scripts/bench-revoke.ts "$@"
fi
if [ "${1:-}" = "--churn" ]; then
  shift
  [ "$(id -u)" = "0" ] || { echo "--churn needs root (a scratch network namespace): run 'sudo npm run bench -- --churn'." >&2; exit 2; }
  exec node --import ./scripts/register-ts.mjs scripts/bench-churn.ts "$@"
fi
node --import ./scripts/register-ts.mjs scripts/bench-all.ts "$@"

# ClusterNetworkPolicy rows, after the table: scripts/bench-cnp.ts (pure) and, as root,
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
echo "ClusterNetworkPolicy: ${cnp_tier} tier + 100 CNPs"
node --import ./scripts/register-ts.mjs scripts/bench-cnp.ts --tier "$cnp_tier" --runs "$cnp_runs"
if [ "$(id -u)" = "0" ]; then
  node --import ./scripts/register-ts.mjs scripts/bench-cnp-kernel.ts --tier "$cnp_tier" --runs "$cnp_kernel_runs"
fi

# Egress by DNS name: the time the DNS agent holds an answer at 200 answers/s, beside the same queue's floor
# (scripts/bench-dns-hold.ts, root only: a scratch network namespace).
if [ "$(id -u)" = "0" ]; then
  echo
  node --import ./scripts/register-ts.mjs scripts/bench-dns-hold.ts --rate 200 --count 2000
fi
