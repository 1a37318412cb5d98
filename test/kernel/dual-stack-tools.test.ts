// The operator tools on a dual-stack node, against the real kernel in scratch namespaces: `apply` of a
// dual-stack cluster, then `diff` (live and from saved ip6tables-save / ipset save dumps) finds nothing;
// one IPv6 rule and one inet6 set member drifted show up on the IPv6 side only; `inspect --family 6` and
// `trace` of IPv6 packets read the IPv6 ruleset; `cleanup` removes both families' objects and leaves
// foreign IPv4/IPv6 rules and sets byte-identical.
//
// Trace expectations come from the NetworkPolicy spec, not from the compiler: "pods become isolated for
// ingress if there is any NetworkPolicy that both selects the pod and has Ingress in its policyTypes";
// "traffic is allowed if it is allowed by at least one policy" (the union); an ipBlock peer allows "the
// CIDR ... except the CIDRs in except", and a peer selector matches pods by label whatever their family.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { run as exec } from '../../src/dataplane/exec.js';
import { ip, NODE, writeCluster } from '../helpers/dual-stack-cluster.js';
import { BACKENDS, FOREIGN_IPSETS, FOREIGN_V4, ipset, iptables, iptablesRestore, iptablesSave, stable } from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns, type Netns } from '../helpers/netns.js';

jest.setTimeout(60_000);

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

interface DiffJson {
  families: { family: 4 | 6; changes: { object: string; name: string; action: string }[] }[];
}

const changesOf = (json: DiffJson, family: 4 | 6) => json.families.find((f) => f.family === family)?.changes ?? [];

// Someone else's IPv6 state: a chain and rule in FORWARD, and an inet6 set (and an IPv4 one) it references.
const FOREIGN_V6_SETS = 'create KUBE-V6-NETS hash:net family inet6 hashsize 1024 maxelem 65536\nadd KUBE-V6-NETS fd00:99::/64\n';
const FOREIGN_V6_RULES = `*filter
:KUBE-FORWARD - [0:0]
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m set --match-set KUBE-V6-NETS src -j ACCEPT
COMMIT
`;

describeKernel('the tools on a dual-stack node', () => {
  let dir: string;
  let cluster: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'nft-ds-tools-'));
    cluster = writeCluster(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const flags = (ns: Netns) => ['--netns', ns.name, '--backend', 'nft', '--log-level', 'error'];
  const withCluster = (ns: Netns) => [...flags(ns), '--node-name', NODE, '--resources', cluster];

  async function dumps(ns: Netns): Promise<{ v4: string; v6: string }> {
    const sets = await ipset(ns.name, ['save']);
    const v4 = join(dir, `${ns.name}-v4.txt`);
    const v6 = join(dir, `${ns.name}-v6.txt`);
    writeFileSync(v4, (await iptablesSave(ns.name, 'nft')) + sets);
    writeFileSync(v6, (await iptablesSave(ns.name, 'nft', undefined, 6)) + sets);
    return { v4, v6 };
  }

  it('apply, then diff (live and saved, both families) finds nothing; IPv6 drift shows on the IPv6 side only', async () => {
    await withNetns(async (ns) => {
      expect((await run('apply', ...withCluster(ns))).code).toBe(0);
      // The node really holds both families (else the rest proves nothing about IPv6).
      expect(await iptablesSave(ns.name, 'nft', 'filter', 6)).toMatch(/^:nf-FORWARD /m);
      expect(await ipset(ns.name, ['save'])).toMatch(/^create nf6\S+ hash:\S+ family inet6 /m);

      const live = await run('diff', ...withCluster(ns));
      expect(live).toMatchObject({ code: 0, out: 'in sync: the kernel holds exactly the desired chains, sets and hooks\n' });

      const { v4, v6 } = await dumps(ns);
      const saved = await run('diff', ...withCluster(ns), '--saved', v4, '--saved', v6, '--json');
      expect(saved.code).toBe(0);
      expect((JSON.parse(saved.out) as DiffJson).families.map((f) => f.family)).toEqual([4, 6]);
      // One file holding both tools' output (ip6tables-save's own header line tells the tables apart).
      const one = join(dir, 'both.txt');
      writeFileSync(
        one,
        (await iptablesSave(ns.name, 'nft')) + (await iptablesSave(ns.name, 'nft', undefined, 6)) + (await ipset(ns.name, ['save'])),
      );
      expect((await run('diff', ...withCluster(ns), '--saved', one)).code).toBe(0);
      // Only the IPv4 dump: IPv6 is not silently "in sync".
      const partial = await run('diff', ...withCluster(ns), '--saved', v4);
      expect(partial.err).toMatch(/has no IPv6 \*filter table, so IPv6 was not compared/);
      expect(partial.out).toMatch(/\(IPv6 not compared: not in the saved dump\)/);

      // Drift: drop the first rule of web/db-ingress's IPv6 policy chain, and web/api's IPv6 address from an inet6 set.
      const v6save = await iptablesSave(ns.name, 'nft', 'filter', 6);
      const ruleLine = v6save.split('\n').find((l) => /^-A nf-pi-\S+ .*--comment "?[^"]*web\/db-ingress ingress:0/.test(l));
      expect(ruleLine).toBeDefined();
      const chain = ruleLine!.split(' ')[1]!;
      await iptables(ns.name, 'nft', ['-D', chain, '1'], 6);
      const setLine = (await ipset(ns.name, ['save']))
        .split('\n')
        .find((l) => l.startsWith('add nf6') && l.endsWith(` ${ip('web/api', 6)}`));
      expect(setLine).toBeDefined();
      const set = setLine!.split(' ')[1]!;
      await ipset(ns.name, ['del', set, ip('web/api', 6)]);

      for (const how of ['live', 'saved'] as const) {
        const args = how === 'live' ? [] : Object.values(await dumps(ns)).flatMap((f) => ['--saved', f]);
        const drifted = await run('diff', ...withCluster(ns), ...args, '--json');
        expect({ how, code: drifted.code }).toEqual({ how, code: 1 });
        const json = JSON.parse(drifted.out) as DiffJson;
        expect({ how, v4: changesOf(json, 4) }).toEqual({ how, v4: [] });
        expect({
          how,
          v6: changesOf(json, 6)
            .map((c) => `${c.object} ${c.name}`)
            .sort(),
        }).toEqual({ how, v6: [`chain ${chain}`, `set ${set}`].sort() });
      }
      // The text form names the family and shows the missing member.
      const text = await run('diff', ...withCluster(ns));
      expect(text.out).toMatch(/^### IPv6 /m);
      expect(text.out).not.toMatch(/^### IPv4 /m);
      expect(text.out).toContain(`+${ip('web/api', 6)}`);

      // apply repairs it; diff agrees.
      expect((await run('apply', ...withCluster(ns))).code).toBe(0);
      expect((await run('diff', ...withCluster(ns))).code).toBe(0);
    });
  });

  it('inspect --family 6 and trace of IPv6 packets read the IPv6 ruleset; verdicts as the spec says', async () => {
    await withNetns(async (ns) => {
      expect((await run('apply', ...withCluster(ns))).code).toBe(0);

      const inspected = await run('inspect', ...flags(ns), '--family', '6', '--pod', 'web/db');
      expect(inspected.code).toBe(0);
      expect(inspected.out).toMatch(/^ruleset live kernel \(IPv6, netns /m);
      expect(inspected.out).toContain(`web/db (${ip('web/db', 6)})`);
      expect(inspected.out).toMatch(/policy web\/db-ingress ingress/);
      expect(inspected.out).toMatch(/policy web\/db-v6-block ingress/);
      // Without --family: a dual-stack pod shows IPv4 and names the other family; an IPv6-only pod shows IPv6.
      const dflt = await run('inspect', ...flags(ns), '--pod', 'web/db');
      expect(dflt.out).toContain(`web/db (${ip('web/db', 4)})`);
      expect(dflt.out).toContain('web/db also has IPv6 rules: netfence inspect --family 6 --pod web/db');
      const only6 = await run('inspect', ...flags(ns), '--pod', 'web/v6only', '--json');
      expect(only6.code).toBe(0);
      expect(JSON.parse(only6.out)).toMatchObject({ family: 6, pods: [{ pod: 'web/v6only', ip: ip('web/v6only', 6) }] });

      // [src, dst, port, allowed?, why (spec)]
      const cases: [string, string, number, boolean, string][] = [
        ['web/api', 'web/db', 5432, true, 'db-ingress: podSelector role=api, TCP 5432'],
        ['web/v6only', 'web/db', 5432, true, 'db-ingress: an IPv6-only role=api pod is a peer on IPv6'],
        ['web/api6first', 'web/db', 5432, true, 'db-ingress: podIPs listed IPv6 first'],
        ['ops/tool', 'web/db', 5432, true, 'db-ingress: namespaceSelector team=ops'],
        ['web/other', 'web/db', 5432, false, 'web/db is isolated; role=other is in no policy'],
        ['web/api', 'web/db', 80, false, 'no policy allows port 80'],
        ['ops/tool', 'web/db', 8080, true, 'db-v6-block: fd00:10:244:2::5 is in fd00:10:244:2::/64'],
        ['web/other', 'web/db', 8080, false, 'db-v6-block: fd00:10:244:2::6 is the except'],
        ['fd00:10:244:2::77', 'web/db', 8080, true, 'db-v6-block: an address in the block that is no pod'],
        ['fd00:10:244:3::1', 'web/db', 8080, false, 'outside the block'],
      ];
      const got = [];
      for (const [src, dst, port, , why] of cases) {
        const r = await run(
          'trace',
          ...flags(ns),
          '--resources',
          cluster,
          '--node-name',
          NODE,
          '--family',
          '6',
          '--src',
          src,
          '--dst',
          dst,
          '--proto',
          'tcp',
          '--port',
          String(port),
        );
        expect(r.out).toMatch(/^ruleset live kernel \(IPv6/m);
        got.push({ src, dst, port, why, code: r.code === 0 ? 'allowed' : r.code === 1 ? 'dropped' : `error ${r.err}` });
      }
      expect(got).toEqual(cases.map(([src, dst, port, allowed, why]) => ({ src, dst, port, why, code: allowed ? 'allowed' : 'dropped' })));
      // The IPv6 ipBlock never matches IPv4 traffic: the same peer on IPv4 is dropped at 8080.
      expect(
        (
          await run(
            'trace',
            ...flags(ns),
            '--resources',
            cluster,
            '--node-name',
            NODE,
            '--family',
            '4',
            '--src',
            'ops/tool',
            '--dst',
            'web/db',
            '--proto',
            'tcp',
            '--port',
            '8080',
          )
        ).code,
      ).toBe(1);
      // A family the pod does not have is an exact error, not a trace of something else.
      const none = await run(
        'trace',
        ...flags(ns),
        '--resources',
        cluster,
        '--node-name',
        NODE,
        '--family',
        '6',
        '--src',
        'web/v4only',
        '--dst',
        'web/db',
        '--proto',
        'tcp',
        '--port',
        '5432',
      );
      expect(none.code).toBe(2);
      expect(none.err).toMatch(/pod web\/v4only has no IPv6 address \(it has 10\.244\.1\.12\)/);
    });
  });

  it.each(BACKENDS)("cleanup removes both families' objects; foreign IPv4/IPv6 rules and sets are byte-identical (%s)", async (backend) => {
    await withNetns(async (ns) => {
      await exec('ipset', ['restore'], { netns: ns.name, input: FOREIGN_IPSETS + FOREIGN_V6_SETS });
      await iptablesRestore(ns.name, backend, FOREIGN_V4);
      await iptablesRestore(ns.name, backend, FOREIGN_V6_RULES, 6);
      const everything = async () => ({
        v4: stable(await iptablesSave(ns.name, backend)),
        v6: stable(await iptablesSave(ns.name, backend, undefined, 6)),
        sets: await ipset(ns.name, ['save']),
        list: await ipset(ns.name, ['list']),
      });
      const before = await everything();
      const f = ['--netns', ns.name, '--backend', backend, '--log-level', 'error'];
      expect((await run('apply', ...f, '--node-name', NODE, '--resources', cluster)).code).toBe(0);
      const applied = await everything();
      expect(applied.v6).toMatch(/^:nf-/m);
      expect(applied.sets).toMatch(/ family inet6 /);

      const said = await run('cleanup', ...f);
      expect(said.code).toBe(0);
      const after = await everything();
      expect(after).toEqual(before);
      expect(after.v6).not.toMatch(/nf-/);
      expect(after.list).not.toMatch(/^Name: nf[46][a-z]:/m);
    });
  });
});
