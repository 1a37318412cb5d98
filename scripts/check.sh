#!/usr/bin/env bash
# House checks, run by `npm test` before the suites (and alone by `npm run check`): format, lint, unused code,
# no ticket or branch references in tracked text, generated docs up to date, types. Every check runs even when an earlier one fails, so one
# run lists everything; each finding names file:line.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
step() {
  local name=$1
  shift
  echo "== check: $name" >&2
  "$@" || failed+=("$name")
}
step "format (prettier; fix: npm run format)" node scripts/lib/check-format.mjs
step "lint (eslint)" npx --no-install eslint --max-warnings 0 --format ./scripts/lib/lint-format.mjs .
step "unused files, exports, dependencies (knip)" npx --no-install knip --no-progress
step "runtime dependencies = what src/ loads (scripts/check-runtime-deps.ts)" node --import ./scripts/register-ts.mjs scripts/check-runtime-deps.ts
step "no ticket numbers or branch names in tracked text (scripts/check-tracked-text.ts)" node --import ./scripts/register-ts.mjs scripts/check-tracked-text.ts
step "docs/commands.md option tables = the command specs (npm run docs:commands)" node --import ./scripts/register-ts.mjs scripts/docs-commands.ts --check
step "structure: the layer map, netfilter text only in render/, no import cycles (test/unit/{layers,text-layer,import-cycles})" \
  node --experimental-vm-modules --no-warnings node_modules/jest/bin/jest.js --selectProjects unit --silent \
  -- test/unit/layers.test.ts test/unit/text-layer.test.ts test/unit/import-cycles.test.ts
step "BENCHMARKS.md at most 300 lines (the latest figures, not their history)" bash -c '[ "$(wc -l <BENCHMARKS.md)" -le 300 ]'
step "types (tsc, product)" npx --no-install tsc -p tsconfig.json --noEmit --pretty false
step "types (tsc, tests and scripts)" npx --no-install tsc -p tsconfig.test.json --noEmit --pretty false
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED check: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "== checks passed" >&2
