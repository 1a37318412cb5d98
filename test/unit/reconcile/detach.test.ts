// The syncer keeps its last parsed kernel read detached from the texts (src/reconcile/detach.ts): the copy
// must be the same state, or the drift check would see drift that is not there (or miss some).

import { loadGoldenCase } from '../../helpers/golden.js';
import { observeFamily, planFamily, type ObservedFamily } from '../../../src/plan/index.js';
import { detachObserved, ownString } from '../../../src/reconcile/detach.js';
import { sameObserved } from '../../../src/reconcile/kernel-reads.js';
import { renderFullRestore, type RuleRecord } from '../../../src/render/index.js';

const OWN = { chainPrefix: 'nf-', ipsetPrefix: 'nf' };
const desired = loadGoldenCase('seed-db-policy').result.desired.v4;

function observed() {
  const ipsets = desired.ipsets
    .flatMap((s) => [`create ${s.name} ${s.type} family inet hashsize 1024 maxelem 65536`, ...s.members.map((m) => `add ${s.name} ${m}`)])
    .join('\n');
  const save = renderFullRestore(desired)
    .replace(/^-I (\S+) 1 /gm, '-A $1 ')
    .replace('*filter\n', '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n');
  return observeFamily(4, save, ipsets, OWN);
}

/** What a plan reads of each rule: its text and identity. */
const identity = (r: RuleRecord) => ({ text: r.text, hash: r.hash, form: r.form });
const asData = (o: ObservedFamily) => ({
  ...o,
  chains: new Map([...o.chains].map(([name, rules]) => [name, rules.map(identity)])),
  hooks: new Map([...o.hooks].map(([name, hooks]) => [name, hooks.map((h) => ({ position: h.position, rule: identity(h.rule) }))])),
});

describe('detachObserved', () => {
  it('is the same observed state, field by field', () => {
    const original = observed();
    const copy = detachObserved(original);
    // The rules keep their text and identity (hash, canonical form), not the parse's other fields.
    expect(asData(copy)).toEqual(asData(original));
    expect(sameObserved(copy, original)).toBe(true);
    expect(copy.chains.size).toBeGreaterThan(0);
    expect([...copy.ipsets.values()].some((s) => s.members.length > 0)).toBe(true);
    expect(copy.policies.get('FORWARD')).toBe('DROP');
  });

  it('plans exactly as the original does', () => {
    const original = observed();
    expect(planFamily(desired, detachObserved(original), OWN)).toEqual(planFamily(desired, original, OWN));
  });

  it('shares no containers with the original', () => {
    const original = observed();
    const copy = detachObserved(original);
    expect(copy.chains).not.toBe(original.chains);
    const [name, set] = [...original.ipsets][0]!;
    expect(copy.ipsets.get(name)!.members).not.toBe(set.members);
  });
});

describe('ownString', () => {
  it.each(['', 'short', '10.244.123.45', 'a'.repeat(13), 'x'.repeat(5000), 'ünïcødé rule comment text'])(
    'keeps the text (case %#)',
    (text) => {
      const parent = `<<${text}>>`;
      expect(ownString(parent.slice(2, -2))).toBe(text);
    },
  );
});
