#!/usr/bin/env bash
# The README's test command (`npm test`): installs what it needs, builds, type-checks, runs every suite.
# Kernel suites need root (they create their own network namespaces); without root they are skipped, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/prereqs.sh
ensure_system_packages
ensure_node_modules
npm run --silent build
npx --no-install tsc -p tsconfig.test.json
JEST="node --experimental-vm-modules node_modules/jest/bin/jest.js"
if [ "$(id -u)" = "0" ]; then
  $JEST --selectProjects unit golden kernel --runInBand "$@"
else
  echo "SKIPPED: kernel and sandbox suites (test/kernel) need root to create network namespaces; run 'sudo npm test' for them." >&2
  $JEST --selectProjects unit golden "$@"
  echo "SKIPPED: kernel and sandbox suites (not root)" >&2
fi
