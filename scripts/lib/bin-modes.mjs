// postbuild: tsc writes dist/ files without the executable bit, so `./dist/cli/main.js` and a linked
// `kubectl-netfence` would not run. Every `bin` entry of package.json gets rwxr-xr-x (each starts with
// `#!/usr/bin/env node`).
import { chmodSync, readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
for (const path of Object.values(pkg.bin ?? {})) chmodSync(new URL(`../../${path}`, import.meta.url), 0o755);
