#!/usr/bin/env bash
# The README's test command (`npm test`): installs what it needs, builds, runs the house checks, runs every suite.
# Kernel suites need root (they create their own network namespaces); without root they are skipped, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/prereqs.sh
prepare
echo "node $(node --version) ($(command -v node))" >&2
JEST="node --experimental-vm-modules node_modules/jest/bin/jest.js"
RESULTS=$(mktemp)
CHECKS=$(mktemp)
trap 'rm -f "$RESULTS" "$CHECKS"' EXIT
# Format, lint, unused code and types (scripts/check.sh; each finding printed as file:line) run beside the
# suites: they need a CPU while the kernel suites mostly wait on packets. Their report is printed at the end.
bash scripts/check.sh >"$CHECKS" 2>&1 &
checks_pid=$!
status=0
if [ "$(id -u)" = "0" ]; then
  # Two workers: a kernel file spends most of its time waiting on packets and timers, not on a CPU, so two at
  # once (and the unit files beside them) nearly halve the wall time. Files can share the machine because each
  # owns what it touches (CONTRIBUTING, "How npm test runs"); the sequencer starts the longest files first.
  $JEST --selectProjects unit golden kernel --maxWorkers=2 --json --outputFile="$RESULTS" "$@" || status=$?
else
  echo "SKIPPED: kernel and sandbox suites (test/kernel) need root to create network namespaces; run 'sudo npm test' for them." >&2
  $JEST --selectProjects unit golden --json --outputFile="$RESULTS" "$@" || status=$?
  echo "SKIPPED: kernel and sandbox suites (not root)" >&2
fi
checks_status=0
wait "$checks_pid" || checks_status=$?
cat "$CHECKS" >&2
# One plain closing line, whatever the runner printed above it.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' "$RESULTS" 2>/dev/null || true
[ "$checks_status" = 0 ] || echo "FAILED: the house checks (printed above)" >&2
[ "$status" = 0 ] || exit $status
exit $checks_status
