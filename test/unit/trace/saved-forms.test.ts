// The tracer's input made from compiled states through one SavedForms (a map reads every node's state, and each
// node's twice: the old cluster's, then the new one's). A state with the same hooks, chains and sets as the last
// one read gets the same ruleset and set map back; any other state is read anew, so a chain or set the change
// replaced is the one traced.

import { describe, expect, it } from '@jest/globals';
import type { Chain, FamilyState, IpSet } from '../../../src/model/index.js';
import { chainName, ipSetName } from '../../../src/model/index.js';
import { rulesetOfDesired, SavedForms } from '../../../src/trace/index.js';

const chain = (name: string, target: string): Chain => ({
  name: chainName(name),
  rules: [{ match: [], action: { kind: 'jump', target: chainName(target) } }],
  role: { kind: 'static' },
});
const set = (name: string, members: string[]): IpSet => ({ name: ipSetName(name), type: 'hash:ip', family: 4, members, description: name });
// The compiler hands out one hooks array per settings: the same array here.
const hooks: FamilyState['hooks'] = [];
const state = (chains: Chain[], ipsets: IpSet[]): FamilyState => ({ family: 4, chains, ipsets, hooks });

describe('rulesetOfDesired through one SavedForms', () => {
  const a = chain('nf-a', 'nf-b');
  const b = chain('nf-b', 'nf-c');
  const s = set('nf4s:x', ['10.0.0.1']);

  it('the same chains and sets (other arrays): the same ruleset and set map', () => {
    const forms = new SavedForms();
    const first = rulesetOfDesired(state([a, b], [s]), forms);
    const again = rulesetOfDesired(state([a, b], [s]), forms);
    expect(again.ruleset).toBe(first.ruleset);
    expect(again.ipsets).toBe(first.ipsets);
  });

  it('a chain or set replaced: read anew, the new one traced', () => {
    const forms = new SavedForms();
    const first = rulesetOfDesired(state([a, b], [s]), forms);
    const b2 = chain('nf-b', 'nf-d');
    const s2 = set('nf4s:x', ['10.0.0.2']);
    const next = rulesetOfDesired(state([a, b2], [s2]), forms);
    expect(next.ruleset).not.toBe(first.ruleset);
    expect(next.ruleset.chains.get('nf-b')!.rules.map((r) => r.text)).toEqual(['-j nf-d']);
    expect(next.ipsets.get('nf4s:x')!.members).toEqual(['10.0.0.2']);
    // One chain fewer is another state too.
    expect(rulesetOfDesired(state([a], [s2]), forms).ruleset.chains.has('nf-b')).toBe(false);
  });
});
