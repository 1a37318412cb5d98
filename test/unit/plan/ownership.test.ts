// Which ipsets are ours (observed.ts ownsIpSet): every set the planner may create, including the temporary
// set a retype builds (retype.ts tempSetName), so one left behind by an interrupted retype is destroyed by the
// next sync; and nothing whose name merely resembles ours.

import { observeFamily, planFamily, tempSetName } from '../../../src/plan/index.js';
import { renderFullRestore } from '../../../src/render/index.js';
import { loadGoldenCase } from '../../helpers/golden.js';

const OWN = { chainPrefix: 'nf-', ipsetPrefix: 'nf' };
const desired = loadGoldenCase('seed-db-policy').result.desired.v4;
const set = desired.ipsets[0]!;
const TEMP = tempSetName(set, OWN);
const FOREIGN = ['KUBE-CLUSTER-IP', 'nfx4s:abc', 'nf4s-abc', 'nf44:abc', 'other-nf4s:abc'];

/** The kernel as our last apply left it, plus `extra` sets (hash:ip, no members). */
function observedWith(extra: readonly string[]) {
  const ipsets = [...desired.ipsets.map((s) => s.name), ...extra]
    .map((name) => `create ${name} hash:ip family inet hashsize 1024 maxelem 65536`)
    .join('\n');
  const save = renderFullRestore(desired)
    .replace(/^-I (\S+) 1 /gm, '-A $1 ')
    .replace('*filter\n', '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n');
  return observeFamily(4, save, ipsets, OWN);
}

describe('ipset ownership', () => {
  it('a temporary set left by an interrupted retype is ours: the next plan destroys it', () => {
    expect(TEMP).not.toBe(set.name);
    const plan = planFamily(desired, observedWith([TEMP]), OWN);
    expect(plan.staleSets).toEqual([TEMP]);
    expect(plan.ipsetDestroy).toBe(`destroy ${TEMP}\n`);
  });

  it('sets whose names only resemble ours are left alone', () => {
    const plan = planFamily(desired, observedWith(FOREIGN), OWN);
    expect(plan.staleSets).toEqual([]);
    expect(plan.ipsetDestroy).toBe('');
  });
});
