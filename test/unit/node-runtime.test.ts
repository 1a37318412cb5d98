import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// `npm test` must exercise the runtime the image ships: scripts/lib/prereqs.sh puts the pinned Node first on
// PATH, so jest and every child a test spawns by name (`node`) or by process.execPath run on it. A suite run
// by hand runs on whatever node started it; only the npm test run is held to this.
const packageJson = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { engines: { node: string } };
const requiredMajor = /^>=(\d+) </.exec(packageJson.engines.node)?.[1];
const viaNpmTest = process.env['npm_lifecycle_event'] === 'test';

describe('the Node.js the test run uses', () => {
  it('package.json engines names one supported major', () => {
    expect(requiredMajor).toBe('24');
  });

  (viaNpmTest ? it : it.skip)('runs jest on that major', () => {
    expect(process.version).toMatch(new RegExp(`^v${requiredMajor}\\.`));
  });

  (viaNpmTest ? it : it.skip)('gives children that run `node` by name the same major', () => {
    expect(execFileSync('node', ['--version'], { encoding: 'utf8' }).trim()).toMatch(new RegExp(`^v${requiredMajor}\\.`));
  });
});
