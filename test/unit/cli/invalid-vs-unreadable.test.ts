// The line between the two kinds of bad input, seen from the one-shot commands (no root: `compile`,
// and `diff --saved` against a dump). An invalid NetworkPolicy is read (kept, enforced fail-closed) and
// listed; a document that cannot be read makes the command refuse with exit 2.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { RULES_DIR } from '../../helpers/golden.js';

const EMPTY_DUMP = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n';
const INVALID = join(RULES_DIR, 'invalid-policy-fails-closed', 'cluster.yaml');

async function run(argv: readonly string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (t) => void out.push(t), err: (t) => void err.push(t) });
  return { code, out: out.join(''), err: err.join('') };
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'nft-invalid-'));
  writeFileSync(join(dir, 'dump.txt'), EMPTY_DUMP);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('invalid policy vs unreadable source', () => {
  const problem = 'error: NetworkPolicy shop/broken: spec.ingress[0].from[0].ipBlock.cidr: "10.0.0.300/8" is not a CIDR (bad address)';

  it('compile: an invalid policy is listed and its fail-closed chain is printed (exit 0)', async () => {
    const r = await run(['compile', '--node-name', 'node-1', '--resources', INVALID]);
    expect(r.code).toBe(0);
    expect(r.err).toContain(problem);
    expect(r.out).toMatch(/^:nf-pi-\S+ - \[0:0\]$/m);
  });

  it('diff: an invalid policy is listed on stderr and the diff is shown (exit 1, differs)', async () => {
    const r = await run(['diff', '--node-name', 'node-1', '--resources', INVALID, '--saved', join(dir, 'dump.txt')]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(problem);
  });

  it('diff: the same file with a document that does not parse is an error (exit 2), nothing is planned', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, `${readFileSync(INVALID, 'utf8')}---\nkind: NetworkPolicy\nmetadata: {name: x\n`);
    const r = await run(['diff', '--node-name', 'node-1', '--resources', bad, '--saved', join(dir, 'dump.txt')]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/error: \S+bad\.yaml#6: \(document\): /);
    expect(r.out).toBe('');
  });
});
