#!/usr/bin/env bash
# The README's test command (`npm test`): installs what it needs, builds, runs the house checks, runs every suite.
# Kernel suites need root (they create their own network namespaces); without root they are skipped, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/prereqs.sh
prepare
echo "node $(node --version) ($(command -v node))" >&2
# Format, lint, unused code and types first; each finding is printed as file:line (scripts/check.sh).
bash scripts/check.sh
JEST="node --experimental-vm-modules node_modules/jest/bin/jest.js"
RESULTS=$(mktemp)
trap 'rm -f "$RESULTS"' EXIT
status=0
if [ "$(id -u)" = "0" ]; then
  $JEST --selectProjects unit golden kernel --runInBand --json --outputFile="$RESULTS" "$@" || status=$?
else
  echo "SKIPPED: kernel and sandbox suites (test/kernel) need root to create network namespaces; run 'sudo npm test' for them." >&2
  $JEST --selectProjects unit golden --json --outputFile="$RESULTS" "$@" || status=$?
  echo "SKIPPED: kernel and sandbox suites (not root)" >&2
fi
# One plain closing line, whatever the runner printed above it.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' "$RESULTS" 2>/dev/null || true
exit $status
