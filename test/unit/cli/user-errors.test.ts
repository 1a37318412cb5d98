// Errors a user can cause: each is one line naming what is wrong, exit 2, never a stack trace and never a
// silent wrong answer (an empty ruleset for a node the cluster does not have, a timeout hiding the refusal).

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { freePort } from '../../helpers/free-port.js';

const CLUSTER = join(process.cwd(), 'rules', 'seed-db-policy', 'cluster.yaml');

interface Run {
  code: number;
  out: string;
  err: string;
}

async function run(...argv: string[]): Promise<Run> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += t) }, 80);
  return { code, out, err };
}

const oneLine = (r: Run) => {
  expect(r.err.endsWith('\n')).toBe(true);
  expect(r.err.trimEnd().split('\n')).toHaveLength(1);
  expect(r.err).not.toMatch(/\n\s+at /);
};

describe('--node-name a node the cluster does not have', () => {
  it('compile refuses it, naming the nodes it knows, and prints no ruleset', async () => {
    const r = await run('compile', '--node-name', 'nosuchnode', '--resources', CLUSTER);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toBe('netfence compile: --node-name nosuchnode: no such node in the manifests (nodes: node-1, node-2)\n');
  });

  it('diff refuses it too (against a saved dump: no kernel read)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nf-nodename-'));
    try {
      const dump = join(dir, 'dump.txt');
      writeFileSync(dump, (await run('compile', '--node-name', 'node-1', '--resources', CLUSTER)).out);
      const r = await run('diff', '--node-name', 'nosuchnode', '--resources', CLUSTER, '--saved', dump);
      expect(r.code).toBe(2);
      oneLine(r);
      expect(r.err).toContain('--node-name nosuchnode: no such node in the manifests');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a node the manifests name still compiles', async () => {
    const r = await run('compile', '--node-name', 'node-2', '--resources', CLUSTER);
    expect(r.code).toBe(0);
    expect(r.out).toContain('*filter');
  });
});

describe('one line for each', () => {
  it('a configuration value out of range', async () => {
    const r = await run('compile', '--node-name', 'node-1', '--resources', CLUSTER, '--unknown-pods', 'sometimes');
    expect(r.code).toBe(2);
    oneLine(r);
    expect(r.err).toBe(
      'netfence compile: invalid configuration: flag --unknown-pods: /unknownPods: must be one of: fail-closed, fail-open\n',
    );
  });

  it('drops, with no daemon listening where it looks', async () => {
    const r = await run('drops', '--url', `http://127.0.0.1:${await freePort()}`);
    expect(r.code).toBe(2);
    oneLine(r);
    expect(r.err).toMatch(
      /^netfence drops: cannot reach the netfence daemon at http:\/\/127\.0\.0\.1:\d+ \(.*ECONNREFUSED.*\); is it running on this node\? \(--url\)\n$/,
    );
  });
});

describe('an API server that refuses the connection', () => {
  let dir: string;
  let kubeconfig: string;
  let server: string;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nf-refused-'));
    kubeconfig = join(dir, 'kubeconfig');
    // Nothing listens there (the kernel just handed the port out and took it back).
    server = `https://127.0.0.1:${await freePort()}`;
    writeFileSync(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]
users: [{name: op, user: {token: t}}]
contexts: [{name: ops, context: {cluster: c, user: op}}]
current-context: ops
`,
    );
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // Loading the Kubernetes client on a loaded machine takes seconds: the deadline is generous; the old answer came after 15 s.
  it('why --kubeconfig says ECONNREFUSED at once, not a timeout', async () => {
    const r = await run('why', '--kubeconfig', kubeconfig, '--src', 'shop/web', '--dst', 'shop/db:5432');
    expect(r.code).toBe(2);
    oneLine(r);
    expect(r.err).toMatch(
      new RegExp(`^netfence why: cannot list the cluster from the API server ${server}: connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+\\n$`),
    );
  }, 30_000);

  it('kubectl netfence drops (the built plugin, as kubectl runs it) prints one line, no stack trace', async () => {
    const r = await new Promise<Run>((resolve) =>
      execFile(
        process.execPath,
        [join(process.cwd(), 'dist/cli/kubectl-plugin.js'), 'drops'],
        { env: { PATH: process.env['PATH'] ?? '', HOME: dir, KUBECONFIG: kubeconfig } },
        (error, out, err) => resolve({ code: typeof error?.code === 'number' ? error.code : 0, out, err }),
      ),
    );
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    oneLine(r);
    expect(r.err).toMatch(new RegExp(`^kubectl netfence drops: cannot read the nodes: the API server ${server}: connect ECONNREFUSED`));
  }, 30_000);
});
