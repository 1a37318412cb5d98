// A set of ours found with another type is planned as a retype (shown by diff), and the retype steps
// never leave a chain of ours matching on a missing or wrong set.

import { loadGoldenCase } from '../../helpers/golden.js';
import { observeFamily, planFamily, retypeSteps, tempSetName } from '../../../src/plan/index.js';
import { formatPlanDiff } from '../../../src/plan/diff.js';
import { renderFullRestore } from '../../../src/render/index.js';

const OWN = { chainPrefix: 'nf-', ipsetPrefix: 'nf' };
const golden = loadGoldenCase('seed-db-policy');
const desired = golden.result.desired.v4;
const set = desired.ipsets.find((s) => s.type === 'hash:ip' && s.members.includes('10.244.1.11'))!;

/** The kernel as our last apply left it, except `set` was recreated as hash:net with another member. */
function observedWithImpostor() {
  const ipsets = desired.ipsets
    .flatMap((s) =>
      s.name === set.name
        ? [`create ${s.name} hash:net family inet hashsize 1024 maxelem 65536`, `add ${s.name} 10.244.0.0/16`]
        : [`create ${s.name} ${s.type} family inet hashsize 1024 maxelem 65536`, ...s.members.map((m) => `add ${s.name} ${m}`)],
    )
    .join('\n');
  // A save prints hooks as -A; the restore payload inserts them (-I … 1).
  const save = renderFullRestore(desired)
    .replace(/^-I (\S+) 1 /gm, '-A $1 ')
    .replace('*filter\n', '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n');
  return observeFamily(4, save, ipsets, OWN);
}

describe('a set recreated with another type', () => {
  it('is planned as a retype and shown by diff as a type change', () => {
    const plan = planFamily(desired, observedWithImpostor(), OWN);
    expect(plan.retype.map((s) => s.name)).toEqual([set.name]);
    expect(plan.errors).toEqual([]);
    const text = formatPlanDiff([plan]);
    expect(text).toContain('-type hash:net');
    expect(text).toContain('+type hash:ip');
  });

  it('steps: temp set with the desired members, chains re-pointed to it, then the set recreated', () => {
    const temp = tempSetName(set, OWN);
    const steps = retypeSteps(set, observedWithImpostor(), OWN);
    expect(steps.createTemp.split('\n')).toEqual([
      `create ${temp} hash:ip family inet hashsize 1024 maxelem 1048576`,
      `flush ${temp}`,
      ...set.members.map((m) => `add ${temp} ${m}`),
      '',
    ]);
    // Every rule of ours that matched on the set now matches on the temp set, and nothing else changed.
    const users = desired.chains.filter((c) => c.rules.some((r) => r.match.some((m) => m.kind === 'set' && m.set === set.name)));
    expect(users.length).toBeGreaterThan(0);
    expect(steps.reroute).not.toContain(` ${set.name} `);
    for (const c of users) expect(steps.reroute).toContain(`:${c.name} - [0:0]`);
    expect(steps.reroute.replaceAll(temp, set.name)).toBe(
      [
        '*filter',
        ...users.map((c) => `:${c.name} - [0:0]`),
        ...users.flatMap((c) =>
          renderFullRestore(desired)
            .split('\n')
            .filter((l) => l.startsWith(`-A ${c.name} `)),
        ),
        'COMMIT',
        '',
      ].join('\n'),
    );
    expect(steps.recreate.split('\n')).toEqual([
      `destroy ${set.name}`,
      `create ${set.name} hash:ip family inet hashsize 1024 maxelem 1048576`,
      ...set.members.map((m) => `add ${set.name} ${m}`),
      '',
    ]);
  });
});
