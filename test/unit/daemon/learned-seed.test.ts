// What the DNS agent reads back before it grants: the sets a sync did not just create (a set created or recreated
// is empty; a `prime` create line names a set that exists), and each member of those with its remaining timeout,
// addresses in the text the agent itself writes (RFC 5952 for IPv6) so a refresh is not counted twice.

import { createdSets, seededMembers, setsToRead } from '../../../src/daemon/learned-seed.js';
import { defaultDnsLearningSettings, ipSetName, type DnsLearningPlan } from '../../../src/model/index.js';
import type { FamilyPlan } from '../../../src/plan/index.js';

const familyPlan = (p: Partial<Pick<FamilyPlan, 'ipsetOps' | 'ipsetAfterOps' | 'retype'>>): FamilyPlan =>
  ({ ipsetOps: [], ipsetAfterOps: [], retype: [], ...p }) as unknown as FamilyPlan;
const learned = { type: 'hash:ip', family: 4, learned: { timeout: 30, maxelem: 4096 } } as const;

describe('the learned sets the agent reads back', () => {
  it('created and recreated sets are empty; a primed one exists and is not counted as created', () => {
    const plans = [
      familyPlan({
        ipsetOps: [
          { op: 'create', name: 'new4', set: learned },
          { op: 'create', name: 'kept4', set: learned, prime: true },
          { op: 'add', name: 'kept4', members: ['10.0.0.1'] },
        ],
        ipsetAfterOps: [{ op: 'create', name: 'after4', set: learned }],
        retype: [{ name: ipSetName('retyped4'), type: 'hash:ip', family: 4, members: [], description: 'x' }],
      }),
    ];
    expect([...createdSets(plans)].sort()).toEqual(['after4', 'new4', 'retyped4']);
  });

  it('reads only the sets neither counted already nor just created', () => {
    const set = (setName: string) =>
      ({ setName, family: 4, pod: 'x/a', podAddress: '10.0.1.2', policy: 'p', ruleIndex: 0, domainNames: ['a.example'] }) as const;
    const plan: DnsLearningPlan = { settings: defaultDnsLearningSettings, sets: [set('counted4'), set('new4'), set('adopted4')] };
    expect(setsToRead(plan, new Set(['counted4']), new Set(['new4']))).toEqual(['adopted4']);
    expect(setsToRead(plan, new Set(['counted4']), undefined)).toEqual(['new4', 'adopted4']);
  });

  it('each member of the named sets lives its remaining timeout from the read; IPv6 in the agent’s own text', () => {
    const saved = [
      'create l6 hash:ip family inet6 hashsize 1024 maxelem 4096 timeout 30 comment bucketsize 12 initval 0x1',
      'add l6 2001:0db8:0100:0000:0000:0000:0000:0010 timeout 12 comment "1764000000 good.example"',
      'add l6 2001:db8::1 comment "no timeout"',
      'create other hash:ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x2',
      'add other 10.9.9.9',
    ].join('\n');
    expect(seededMembers(saved, ['l6'], 1_000_000, 86_400)).toEqual([
      { set: 'l6', address: '2001:db8:100::10', until: 1_012_000 },
      { set: 'l6', address: '2001:db8::1', until: 1_000_000 + 86_400_000 },
    ]);
  });
});
