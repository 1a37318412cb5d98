// Planning on rule identities (the `nf:<hash>` comments) and meaning, not on printed text: a kernel whose
// iptables prints our rules differently holds exactly what we wrote and is left alone, while a rule edited in
// place with its comment kept, a missing rule, a foreign rule in our chain and a displaced hook are repaired.
// Both the planner (what `diff` and `apply` write) and the syncer's drift check (what the daemon decides)
// are held to it, the latter on the validating fake kernel.

import { observeFamily, planFamily, type FamilyPlan } from '../../../src/plan/index.js';
import { HookWatch } from '../../../src/reconcile/hook-watch.js';
import { systemClock } from '../../../src/reconcile/runner.js';
import { Syncer } from '../../../src/reconcile/syncer.js';
import { parseRuleLine, renderFullRestore } from '../../../src/render/index.js';
import { FakeKernel } from '../../fakes/fake-kernel.js';
import { loadGoldenCase } from '../../helpers/golden.js';
import { memoryLogger, OWN } from '../../helpers/kernel-asserts.js';

const golden = loadGoldenCase('seed-db-policy');
const desired = golden.result.desired;
const v4 = desired.v4;

const IPSETS = v4.ipsets
  .flatMap((s) => [`create ${s.name} ${s.type} family inet hashsize 1024 maxelem 65536`, ...s.members.map((m) => `add ${s.name} ${m}`)])
  .join('\n');

/** `iptables-save -t filter` of a node that holds exactly `v4`, with our hook first in FORWARD. */
const SAVE = renderFullRestore(v4)
  .replace(/^-I (\S+) 1 /gm, '-A $1 ')
  .replace('*filter\n', '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n');

const plan = (save: string): FamilyPlan => planFamily(v4, observeFamily(4, save, IPSETS, OWN), OWN);
const written = (p: FamilyPlan): string[] => p.changes.map((c) => `${c.object} ${c.name}`);

/** Applies `edit` to the text after `-A <chain> ` of every rule of ours (our chains and our hooks). */
const eachOfOurRules = (save: string, edit: (rule: string) => string): string =>
  save.replace(/^-A (\S+) (.*nf:.*)$/gm, (_line, chain: string, rule: string) => `-A ${chain} ${edit(rule)}`);

const POLICY_CHAIN = v4.chains.find((c) => c.role.kind === 'policy' && c.role.direction === 'ingress')!.name;
const POLICY_RULE = SAVE.split('\n').find((l) => l.startsWith(`-A ${POLICY_CHAIN} `) && l.includes('--match-set nf4s:'))!;
const ESTABLISHED_RULE = SAVE.split('\n').find((l) => l.startsWith('-A nf-FORWARD ') && l.includes('--ctstate'))!;
const HOOK_RULE = SAVE.split('\n').find((l) => l.startsWith('-A FORWARD '))!;
const [OTHER_SET] = v4.ipsets.filter((s) => s.name.startsWith('nf4s:') && !POLICY_RULE.includes(s.name)).map((s) => s.name);

const replaceLine = (save: string, line: string, next: string): string => {
  expect(save).toContain(`${line}\n`);
  return save.replace(`${line}\n`, next === '' ? '' : `${next}\n`);
};

describe('the golden state saved as we render it', () => {
  it('plans nothing (control)', () => {
    expect(plan(SAVE).changes).toEqual([]);
  });
});

// How another iptables release may print the rules we wrote: nothing to rewrite.
const REPRINTS: readonly { name: string; save: () => string }[] = [
  {
    name: 'the comment match printed after the others',
    save: () =>
      eachOfOurRules(SAVE, (r) => r.replace(/^(.*?)-m comment --comment ("[^"]*") (.*?)(-[jg] .*)$/, '$1$3-m comment --comment $2 $4')),
  },
  {
    name: 'the set and multiport matches swapped',
    save: () => eachOfOurRules(SAVE, (r) => r.replace(/(-m set --match-set \S+ \S+) (-m multiport --dports \S+)/, '$2 $1')),
  },
  {
    name: 'runs of spaces between words',
    save: () => eachOfOurRules(SAVE, (r) => r.replaceAll(' -m ', '  -m  ').replace(' -j ', '   -j ')),
  },
  { name: 'the tcp module printed after -p tcp', save: () => eachOfOurRules(SAVE, (r) => r.replace('-p tcp ', '-p tcp -m tcp ')) },
  {
    name: 'the set module printing its default',
    save: () => eachOfOurRules(SAVE, (r) => r.replace(/(--match-set \S+ (src|dst))/g, '$1 --update-counters')),
  },
  {
    name: 'limit printing its default burst',
    save: () => eachOfOurRules(SAVE, (r) => r.replace('--limit 10/sec', '--limit 10/sec --limit-burst 5')),
  },
  {
    name: 'conntrack states in another order',
    save: () => eachOfOurRules(SAVE, (r) => r.replace('RELATED,ESTABLISHED', 'ESTABLISHED,RELATED')),
  },
  { name: 'counters (iptables-save -c)', save: () => SAVE.replace(/^-A /gm, '[12:3400] -A ') },
];

describe('our rules printed differently: no rewrite', () => {
  it.each(REPRINTS)('$name', ({ save }) => {
    const text = save();
    expect(text).not.toBe(SAVE);
    const p = plan(text);
    expect(written(p)).toEqual([]);
    expect(p.iptablesRestore).toBe('');
  });
});

// Edits to our rules, each keeping its comment and therefore its hash: repaired all the same.
const TAMPERED: readonly { name: string; save: () => string; repaired: string; rule: string }[] = [
  {
    name: 'an ACCEPT turned into a RETURN',
    save: () => replaceLine(SAVE, ESTABLISHED_RULE, ESTABLISHED_RULE.replace('-j ACCEPT', '-j RETURN')),
    repaired: 'chain nf-FORWARD',
    rule: ESTABLISHED_RULE,
  },
  {
    name: 'the set a policy rule matches replaced by another',
    save: () => replaceLine(SAVE, POLICY_RULE, POLICY_RULE.replace(/nf4s:\S+/, OTHER_SET!)),
    repaired: `chain ${POLICY_CHAIN}`,
    rule: POLICY_RULE,
  },
  {
    name: 'a policy rule widened to every port',
    save: () => replaceLine(SAVE, POLICY_RULE, POLICY_RULE.replace(/ -m multiport --dports \S+/, '')),
    repaired: `chain ${POLICY_CHAIN}`,
    rule: POLICY_RULE,
  },
  {
    name: 'our hook narrowed to one source',
    save: () => replaceLine(SAVE, HOOK_RULE, HOOK_RULE.replace('-A FORWARD ', '-A FORWARD -s 10.0.0.0/8 ')),
    repaired: 'hook FORWARD',
    rule: HOOK_RULE,
  },
];

// The rest of drift, as before: missing, foreign, displaced.
const BROKEN: readonly { name: string; save: () => string; repaired: string; rule: string }[] = [
  { name: 'a rule of ours missing', save: () => replaceLine(SAVE, POLICY_RULE, ''), repaired: `chain ${POLICY_CHAIN}`, rule: POLICY_RULE },
  {
    name: 'a foreign rule inserted in our chain',
    save: () => replaceLine(SAVE, POLICY_RULE, `${POLICY_RULE}\n-A ${POLICY_CHAIN} -j ACCEPT`),
    repaired: `chain ${POLICY_CHAIN}`,
    rule: POLICY_RULE,
  },
  {
    name: 'our jump displaced from the top of FORWARD',
    save: () => replaceLine(SAVE, HOOK_RULE, `-A FORWARD -j ACCEPT\n${HOOK_RULE}`),
    repaired: 'hook FORWARD',
    rule: HOOK_RULE,
  },
];

describe('our rules changed: repaired', () => {
  it.each([...TAMPERED, ...BROKEN])('$name', ({ save, repaired, rule }) => {
    const p = plan(save());
    expect(written(p)).toEqual([repaired]);
    // The rule goes back exactly as rendered (a hook is inserted at the top).
    const body = rule.replace(/^-A (\S+) /, '');
    expect(p.iptablesRestore.split('\n')).toContainEqual(expect.stringMatching(new RegExp(`^-[AI] \\S+ (1 )?${escape(body)}$`)));
  });
});

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe("the syncer's drift check on the fake kernel", () => {
  /** Programs the golden state, then lets someone rewrite rule 1 of `chain` (or insert above it) and re-reads. */
  async function afterForeignEdit(edit: string) {
    const kernel = new FakeKernel();
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    kernel.foreignIptables(4, `*filter\n${edit}\nCOMMIT\n`);
    kernel.writes.length = 0;
    const result = await syncer.sync(desired, { readKernel: true });
    return { kernel, result, after: kernel.save(4) };
  }
  const [, chain, firstPolicyRule] = /^-A (\S+) (.*)$/.exec(SAVE.split('\n').find((l) => l.startsWith(`-A ${POLICY_CHAIN} `))!)!;

  it('a rule of ours rewritten with its matches reordered: no drift, nothing written', async () => {
    const reordered = firstPolicyRule!.replace(/(-m comment --comment "[^"]*") (.*?) (-j .*)$/, '$2 $1 $3');
    expect(reordered).not.toBe(firstPolicyRule);
    const { kernel, result, after } = await afterForeignEdit(`-R ${chain} 1 ${reordered}`);
    expect(after).toContain(`-A ${chain} ${reordered}\n`);
    expect(result.drift).toBe(false);
    expect(kernel.writes).toEqual([]);
  });

  it('a rule of ours edited with its comment kept: drift, and the rule is back as rendered', async () => {
    const tampered = firstPolicyRule!.replace(/-j MARK .*$/, '-j ACCEPT');
    const { kernel, result, after } = await afterForeignEdit(`-R ${chain} 1 ${tampered}`);
    expect(result.drift).toBe(true);
    expect(kernel.writes.map((w) => w.op)).toEqual(['restoreFilter']);
    expect(after).toContain(`-A ${chain} ${firstPolicyRule}\n`);
    expect(after).not.toContain(tampered);
  });
});

describe('the hook watch', () => {
  const watchFirst = async (first: string): Promise<number> => {
    let displaced = 0;
    const watch = new HookWatch({
      firstRule: async () => first,
      expected: () => [{ family: 4, chain: 'FORWARD', rule: parseRuleLine(HOOK_RULE)!.rule }],
      onDisplaced: () => displaced++,
      intervalMs: 0,
      clock: systemClock,
    });
    await watch.check();
    return displaced;
  };

  it('takes our jump printed another way for ours', async () => {
    expect(await watchFirst(HOOK_RULE.replace(' -j ', '  -j '))).toBe(0);
  });

  it('takes our jump edited with its comment kept for displaced', async () => {
    expect(await watchFirst(HOOK_RULE.replace('-A FORWARD ', '-A FORWARD -s 10.0.0.0/8 '))).toBe(1);
  });
});
